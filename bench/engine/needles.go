package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// query is one search a group sends: a needle, and for branch scope the
// session whose current branch it searches (and that session's journal,
// for ripgrep).
type query struct {
	needle, session, file string
}

// kind is what a group asks for.
type kind struct {
	name  string // as the tables print it
	scope string // all or branch
	limit int
	count bool // exact count of every hit
}

var (
	firstPage = kind{"first page, all scope, 3+ chars", "all", 50, false}
	shortPage = kind{"first page, all scope, 1-2 chars", "all", 50, false}
	branch    = kind{"first page, branch scope", "branch", 50, false}
	counts    = kind{"exact count, 20-char needles", "all", 1, true}
	kinds     = []kind{firstPage, shortPage, branch, counts}
)

// needleSet is one sample of every group's needles.
type needleSet map[string][]query

// add appends q to k's group unless sampling found no needle.
func (s needleSet) add(k kind, q query) {
	if q.needle != "" {
		s[k.name] = append(s[k.name], q)
	}
}

// corpusFacts is what sampling learns of the stored history.
type corpusFacts struct {
	sessions, entries int
	ordered           []string // journals in the store's order, for rg in order
}

// sampleNeedles opens the data directory read-only in this process (no
// server may own it), draws sets of needles for every group as bench/search
// does (first pages pool sampled 3-5, 6-12 and 13-40 character needles with
// near-misses of 6-20, a quarter each), and closes it again.
func sampleNeedles(data string, sets, n, countN int, seed uint64) ([]needleSet, corpusFacts, error) {
	var facts corpusFacts
	svc, err := service.Open(service.Options{DataDir: data, MustExist: true, ReadOnly: true, Memory: service.SplitMemory(256 << 20)})
	if err != nil {
		return nil, facts, fmt.Errorf("open %s to sample needles: %w", data, err)
	}
	defer svc.Close()
	ctx := context.Background()
	eng := search.New(svc.Store, svc.Index)
	sessions, err := eng.Sessions(ctx)
	if err != nil || len(sessions) == 0 {
		return nil, facts, fmt.Errorf("list the sessions of %s: %v (none stored?)", data, err)
	}
	// The same sessions in the same order every run, so that one seed
	// draws the same needles from the same history.
	slices.SortFunc(sessions, func(a, b search.SessionSummary) int { return strings.Compare(a.ID, b.ID) })
	facts.sessions, facts.entries = len(sessions), int(svc.Store.LastSeq())
	facts.ordered = benchkit.StoreOrder(svc, sessions)
	r := rand.New(rand.NewPCG(seed, 99))
	sm := &benchkit.Sampler{Text: svc.Store.Text, Last: svc.Store.LastSeq(), R: r}
	var out []needleSet
	for range sets {
		set := needleSet{}
		for i := 0; i < n; i++ {
			var nd string
			switch i % 4 {
			case 0:
				nd = sm.Sample(3, 5)
			case 1:
				nd = sm.Sample(6, 12)
			case 2:
				nd = sm.Sample(13, 40)
			default:
				nd = sm.NearMiss(sm.Sample(6, 20))
			}
			set.add(firstPage, query{needle: nd})
			set.add(shortPage, query{needle: sm.Sample(1, 2)})
		}
		for len(set[branch.name]) < n {
			s := sessions[r.IntN(len(sessions))]
			seqs, err := svc.Store.CurrentBranchSeqs(s.ID)
			if err != nil || len(seqs) == 0 {
				continue
			}
			nd := sm.At(func() uint64 { return seqs[r.IntN(len(seqs))] }, 5, 12)
			if nd == "" {
				continue // no text long enough on this branch
			}
			set[branch.name] = append(set[branch.name], query{needle: nd, session: s.ID, file: s.File})
		}
		for range countN {
			set.add(counts, query{needle: sm.Sample(20, 20)})
		}
		out = append(out, set)
	}
	return out, facts, nil
}

// savedQuery is a query as -needles writes it.
type savedQuery struct{ Needle, Session, File string }

// keepNeedles returns sets, written to path first when path names no file,
// or the sets path holds when it does; an empty path keeps sets.
func keepNeedles(path string, sets []needleSet) ([]needleSet, error) {
	if path == "" {
		return sets, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		out := make([]map[string][]savedQuery, len(sets))
		for i, set := range sets {
			out[i] = map[string][]savedQuery{}
			for k, qs := range set {
				for _, x := range qs {
					out[i][k] = append(out[i][k], savedQuery{x.needle, x.session, x.file})
				}
			}
		}
		b, err := json.MarshalIndent(out, "", " ")
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			return nil, fmt.Errorf("write the needles to %s: %w", path, err)
		}
		fmt.Printf("needles: written to %s\n", path)
		return sets, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the needles: %w", err)
	}
	var in []map[string][]savedQuery
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("read the needles of %s: %w", path, err)
	}
	out := make([]needleSet, len(in))
	for i, set := range in {
		out[i] = needleSet{}
		for k, qs := range set {
			for _, x := range qs {
				out[i][k] = append(out[i][k], query{needle: x.Needle, session: x.Session, file: x.File})
			}
		}
	}
	if len(out) != len(sets) {
		return nil, fmt.Errorf("%s holds %d needle sets; want %d", path, len(out), len(sets))
	}
	fmt.Printf("needles: read from %s (not sampled)\n", path)
	return out, nil
}
