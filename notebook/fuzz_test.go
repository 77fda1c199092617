package notebook

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-history/pi-history/journal"
)

// FuzzWrite feeds arbitrary request bodies through ParseWriteRequest and
// Write against a notebook with three sections, under small limits so the
// ceilings are reached. A rejected write must be a typed error and return
// no record; an accepted one must respect every limit, and its record,
// appended to the journal and read back, must give exactly the state the
// result reported. Seeds live in testdata/fuzz/FuzzWrite.
func FuzzWrite(f *testing.F) {
	for _, seed := range []string{
		`{"sections":{"State":"done","Next":""}}`,
		`{"sections":{"Task":"t"},"replaceAll":true}`,
		`{"reviewed":true}`,
		`{"sections":{"A":"1","B":"2","C":"3","D":"4","E":"5","F":"6"}}`,
		`{"sections":{"Task":5}}`,
		`{"sections":{"Task":"x"},"expectedRevision":0}`,
		"{\"sections\":{\"T\":\"\xff\"}}",
	} {
		f.Add([]byte(seed))
	}
	limits := Limits{MaxBytes: 2048, MaxTokens: 400}
	base := mustWrite(f, chain(f), WriteRequest{Sections: secs("Task", "t", "State", "s", "Next", "n")})
	before := Read(base)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseWriteRequest(body)
		var res Result
		var rec Record
		if err == nil {
			res, rec, err = Write(base, req, limits)
		}
		if err != nil {
			var ie *InvalidError
			var le *LimitError
			var se *StaleError
			if !errors.As(err, &ie) && !errors.As(err, &le) && !errors.As(err, &se) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if !reflect.DeepEqual(rec, Record{}) || res != (Result{}) {
				t.Fatalf("rejected write returned data")
			}
			if err.Error() == "" || !utf8.ValidString(err.Error()) {
				t.Fatalf("bad message %q", err.Error())
			}
			return
		}
		if n := len(rec.Sections); n < 1 || n > MaxSections {
			t.Fatalf("%d sections", n)
		}
		for _, s := range rec.Sections {
			if checkSectionName(s.Name) != "" || !utf8.ValidString(s.Text) || s.Text == "" || s.Text != strings.TrimSpace(s.Text) {
				t.Fatalf("bad section %q: %q", s.Name, s.Text)
			}
		}
		if res.Bytes > limits.MaxBytes || res.TokensEstimate > limits.MaxTokens || res.RemainingBytes != limits.MaxBytes-res.Bytes {
			t.Fatalf("limits: %+v", res)
		}
		if res.Revision != before.Revision+1 {
			t.Fatalf("revision %d after %d", res.Revision, before.Revision)
		}
		data, _ := rec.MarshalJSON()
		back, err := ParseRecord(data)
		if err != nil || !reflect.DeepEqual(back, rec) {
			t.Fatalf("record does not round-trip: %v\n%s", err, data)
		}
		after := appendCustom(t, base, NotebookType, rec)
		st := Read(after)
		if st.Revision != res.Revision || st.Bytes != res.Bytes || st.TokensEstimate != res.TokensEstimate || !reflect.DeepEqual(st.Sections, rec.Sections) {
			t.Fatalf("read back %+v, result %+v", st, res)
		}
		jd, _ := customData(after[len(after)-1], NotebookType)
		if js := journal.NotebookSections(jd); len(js) != len(rec.Sections) {
			t.Fatalf("journal reader sees %d sections, want %d", len(js), len(rec.Sections))
		}
	})
}
