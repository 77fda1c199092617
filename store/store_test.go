package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// TestTreeIsNeverStaleAfterACommit pushes entries while other goroutines
// load the session's tree: after each push returns, the tree has it.
func TestTreeIsNeverStaleAfterACommit(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					st.Tree("s")
				}
			}
		}()
	}
	parent := ""
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("e%04d", i)
		e := &journal.Entry{Type: "message", Role: "user", ID: id, ParentID: parent, Raw: []byte(`{"id":"` + id + `"}`)}
		if _, err := st.Push("s", h, []*journal.Entry{e}); err != nil {
			t.Fatal(err)
		}
		parent = id
		tr, err := st.Tree("s")
		if err != nil {
			t.Fatal(err)
		}
		if tr.Leaf() != id {
			close(stop)
			wg.Wait()
			t.Fatalf("after pushing %s the tree's leaf is %s", id, tr.Leaf())
		}
	}
	close(stop)
	wg.Wait()
}
