package benchkit

import (
	"cmp"
	"slices"

	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// StoreOrder lists the journals of the store's sessions in the order their
// first entries were stored (a bulk import stores a file's entries
// together), for RgInOrder.
func StoreOrder(svc *service.Service, sessions []search.SessionSummary) []string {
	type file struct {
		path  string
		first uint64
	}
	var fs []file
	for _, s := range sessions {
		t, err := svc.Store.Tree(s.ID)
		if err != nil || len(t.Metas) == 0 || s.File == "" {
			continue
		}
		first := t.Metas[0].Seq
		for _, m := range t.Metas {
			first = min(first, m.Seq)
		}
		fs = append(fs, file{s.File, first})
	}
	slices.SortFunc(fs, func(a, b file) int { return cmp.Compare(a.first, b.first) })
	var out []string
	for _, f := range fs {
		out = append(out, f.path)
	}
	return out
}
