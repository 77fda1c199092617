package store

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randMeta is a record with every field set or empty at random, in ASCII
// and multi-byte text.
func randMeta(r *rand.Rand) *Meta {
	str := func() string {
		words := []string{"", "message", "assistant", "019b8f79-4f21-73d4-b63b-828e8bc3cd87", "é日本🙂", strings.Repeat("x", 300)}
		return words[r.IntN(len(words))]
	}
	return &Meta{Seq: r.Uint64(), Session: str(), ID: str(), ParentID: str(), Type: str(), Role: str(), Timestamp: str(),
		Line: r.IntN(1 << 20), Window: r.IntN(50), TextLen: r.IntN(1 << 24), RawLen: r.IntN(1 << 24), Flags: uint8(r.IntN(32)),
		Extra: Extra{CustomType: str(), ToolName: str(), ToolCallID: str(), FirstKeptEntryID: str(), TargetID: str(), Label: str(), Name: str()}}
}

// TestMetaRecordsRoundTripAndRejectCorruption: a record decodes to what
// was encoded, every field included; every cut-short copy of it, and one
// of another version, is reported corrupt, never decoded or a panic.
func TestMetaRecordsRoundTripAndRejectCorruption(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		m := randMeta(r)
		b := m.encode(nil)
		got, err := decodeMeta(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
		for n := range len(b) {
			if got, err := decodeMeta(b[:n]); !errors.Is(err, errCorruptMeta) {
				t.Fatalf("the first %d of %d bytes decoded to %+v, %v; want errCorruptMeta", n, len(b), got, err)
			}
		}
		other := append([]byte{metaVersion + 1}, b[1:]...)
		if _, err := decodeMeta(other); !errors.Is(err, errCorruptMeta) {
			t.Fatalf("a record of version %d decoded: %v", metaVersion+1, err)
		}
	}
}

// FuzzDecodeMeta: any bytes either decode or are reported corrupt, and
// what decodes encodes to a record that decodes the same.
func FuzzDecodeMeta(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		f.Add(randMeta(r).encode(nil))
	}
	f.Add([]byte{metaVersion, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, errCorruptMeta) {
				t.Fatalf("decode: %v", err)
			}
			return
		}
		again, err := decodeMeta(m.encode(nil))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%+v re-encoded decodes to %+v, %v", m, again, err)
		}
	})
}
