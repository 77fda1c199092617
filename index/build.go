package index

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
)

// gatherer works out the distinct trigrams of texts into postingLists. It
// is the writer's alone.
type gatherer struct {
	seen    []uint64 // a bit per trigram key, set while a text is read
	touched []uint32
}

// gatherer returns the writer's gatherer (under wmu), made at first use:
// its bitset is 2 MiB, and a server catches up after every change.
func (x *Index) gatherer() *gatherer {
	if x.gather == nil {
		x.gather = &gatherer{seen: make([]uint64, 1<<24/64)}
	}
	return x.gather
}

// Besides its byte trigrams, a text's postings hold its last two bytes
// (pairKey) and its last byte (lastKey), so that a needle of one or two
// bytes finds every place it can be: at a trigram's start, or where the
// text ends (see shortRanges).
const (
	pairKey = 1 << 24 // | the text's last two bytes
	lastKey = 1 << 25 // | the text's last byte
)

// trigrams returns the distinct trigram keys of text, in the order of
// their first occurrence; the slice is valid until the next call.
func (g *gatherer) trigrams(text []byte) []uint32 {
	for _, k := range g.touched {
		if k < pairKey {
			g.seen[k>>6] &^= 1 << (k & 63)
		}
	}
	g.touched = g.touched[:0]
	if len(text) < 3 {
		return g.touched
	}
	k := uint32(text[0])<<8 | uint32(text[1])
	for _, b := range text[2:] {
		k = (k<<8 | uint32(b)) & 0xFFFFFF
		if g.seen[k>>6]&(1<<(k&63)) == 0 {
			g.seen[k>>6] |= 1 << (k & 63)
			g.touched = append(g.touched, k)
		}
	}
	return g.touched
}

// keys returns every key of text's postings: its trigrams, and the keys
// of its end. The slice is valid until the next call.
func (g *gatherer) keys(text []byte) []uint32 {
	ks := g.trigrams(text)
	n := len(text)
	if n >= 2 {
		ks = append(ks, pairKey|uint32(text[n-2])<<8|uint32(text[n-1]))
	}
	if n >= 1 {
		ks = append(ks, lastKey|uint32(text[n-1]))
	}
	g.touched = ks
	return ks
}

// CatchUp takes in every stored entry above the mark, writing runs as they
// fill and merging runs into segments, and rebuilds the files found
// corrupt. progress, if set, is called now and then with the mark. It
// returns how many entries it took in.
func (x *Index) CatchUp(ctx context.Context, progress func(through uint64)) (int, error) {
	if x.readOnly {
		return 0, nil
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if err := x.applyChanged(ctx); err != nil {
		return 0, err
	}
	if err := x.rebuildBad(ctx); err != nil {
		return 0, err
	}
	if err := x.mergePending(ctx); err != nil {
		return 0, err
	}
	from, last := x.through.Load()+1, x.st.LastSeq()
	if from > last {
		return 0, nil
	}
	g := x.gatherer()
	n := 0
	var ferr error
	publish := func(through uint64) {
		x.bmu.Lock()
		x.through.Store(through)
		x.bmu.Unlock()
		x.notify()
		if progress != nil {
			progress(through)
		}
	}
	err := x.st.ScanTexts(from, last, false, func(seq uint64, text []byte) bool {
		for seq >= x.open.lo+uint64(x.runSpan) {
			if ferr = x.flush(ctx, x.open.lo+uint64(x.runSpan)-1); ferr != nil {
				return false
			}
		}
		keys := g.keys(text)
		x.changeOpen()
		x.bmu.Lock()
		x.open.lists.add(keys, uint16(seq-x.open.lo))
		x.through.Store(seq)
		x.bmu.Unlock()
		if n++; n%4096 == 0 {
			if ferr = ctx.Err(); ferr != nil {
				return false
			}
			publish(seq)
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return n, err
	}
	// Seqs past the last text (entries without searchable text) are
	// covered too.
	for last >= x.open.lo+uint64(x.runSpan) {
		if err := x.flush(ctx, x.open.lo+uint64(x.runSpan)-1); err != nil {
			return n, err
		}
	}
	publish(last)
	return n, nil
}

// flush writes the open run, covered through through (its last seq), as
// a run file, and merges the runs of a segment it completes.
func (x *Index) flush(ctx context.Context, through uint64) error {
	x.changeOpen()
	lo, run, seg := x.open.lo, uint64(x.runSpan), uint64(x.segSpan)
	path, err := x.open.lists.writeTo(x.dir, lo, x.runSpan)
	if err != nil {
		return err
	}
	f, err := openFile(path)
	if err != nil {
		return err
	}
	x.fmu.Lock()
	x.bmu.Lock()
	x.files = append(x.files, f)
	x.gen++
	x.open = openRun{lo: lo + run, lists: newPostingLists(x.open.lists.size())}
	x.through.Store(max(x.through.Load(), through))
	x.bmu.Unlock()
	x.fmu.Unlock()
	if (lo+run-1)%seg == 0 && run < seg {
		return x.mergeSegment(ctx, lo+run-seg)
	}
	return nil
}

// mergeSegment merges the runs covering the segment from lo into one
// file, if every run of it is there.
func (x *Index) mergeSegment(ctx context.Context, lo uint64) error {
	x.fmu.RLock()
	var runs []*postingFile
	first := -1
	for i, f := range x.files {
		if f.lo >= lo && f.hi() <= lo+uint64(x.segSpan)-1 && f.span == x.runSpan {
			if first < 0 {
				first = i
			}
			runs = append(runs, f)
		}
	}
	x.fmu.RUnlock()
	if len(runs) != int(x.segSpan/x.runSpan) {
		return nil
	}
	seg, err := x.merge(ctx, lo, runs)
	if err != nil {
		if bad, ok := err.(*badRun); ok {
			x.markBad(bad.f, bad.err)
			return nil // merged once the run is rebuilt
		}
		return err
	}
	x.fmu.Lock()
	x.files = slices.Replace(x.files, first, first+len(runs), seg)
	x.gen++
	for _, r := range runs {
		r.close()
	}
	x.fmu.Unlock()
	for _, r := range runs {
		x.drop(r.path, nil)
	}
	return nil
}

// mergePending merges every segment whose runs are all there (a merge
// that failed, or waited for a run to be rebuilt).
func (x *Index) mergePending(ctx context.Context) error {
	x.fmu.RLock()
	var los []uint64
	for _, f := range x.files {
		if f.span == x.runSpan && x.runSpan < x.segSpan && f.hi()%uint64(x.segSpan) == 0 {
			los = append(los, f.hi()-uint64(x.segSpan)+1)
		}
	}
	x.fmu.RUnlock()
	for _, lo := range los {
		if err := x.mergeSegment(ctx, lo); err != nil {
			return err
		}
	}
	return nil
}

// merge writes the segment from lo out of its runs and opens it.
func (x *Index) merge(ctx context.Context, lo uint64, runs []*postingFile) (*postingFile, error) {
	for _, r := range runs {
		if err := r.checkAll(); err != nil {
			return nil, &badRun{r, err}
		}
	}
	w := newFileWriter(lo, x.segSpan)
	at := make([]int, len(runs)) // each run's next directory entry
	var offs []uint16
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The smallest key any run has next.
		key, any := uint32(0), false
		for i, r := range runs {
			if at[i] < r.keys {
				if k := r.keyAt(at[i]); !any || k < key {
					key, any = k, true
				}
			}
		}
		if !any {
			break
		}
		offs = offs[:0]
		for i, r := range runs {
			if at[i] >= r.keys || r.keyAt(at[i]) != key {
				continue
			}
			c, err := r.entry(at[i])
			if err != nil {
				return nil, &badRun{r, err}
			}
			at[i]++
			base := len(offs)
			if offs, err = c.decode(offs); err != nil {
				return nil, &badRun{r, fmt.Errorf("index: %s: %w", filepath.Base(r.path), err)}
			}
			shift := uint16(r.lo - lo)
			for j := base; j < len(offs); j++ {
				offs[j] += shift
			}
		}
		w.add(key, offs)
	}
	path, err := w.write(x.dir)
	if err != nil {
		return nil, err
	}
	return openFile(path)
}

// badRun is a run a merge found corrupt.
type badRun struct {
	f   *postingFile
	err error
}

func (b *badRun) Error() string { return b.err.Error() }

// applyChanged builds again what the store has changed below the mark:
// the store marks a seq whose entry it deleted or whose text it replaced
// (a rewritten journal line). A deleted entry left in the postings would
// only be a candidate whose text is gone, but a replaced text's new
// trigrams must be found, so the file (or the open run) holding each
// marked seq is built again from the store. Writers are held meanwhile
// when there is something to rebuild, so that a bulk store's rebuilt
// files hold only what no crash can take back.
func (x *Index) applyChanged(ctx context.Context) error {
	if seqs, err := x.st.Deleted(1); err != nil || len(seqs) == 0 {
		return err
	}
	release := x.st.HoldWrites()
	defer release()
	for {
		seqs, err := x.st.Deleted(4096)
		if err != nil || len(seqs) == 0 {
			return err
		}
		var files []*postingFile
		inOpen := false
		x.fmu.RLock()
		through := x.through.Load()
		for _, seq := range seqs {
			switch {
			case seq > through:
			case seq >= x.open.lo:
				inOpen = true
			default:
				i := sort.Search(len(x.files), func(i int) bool { return x.files[i].hi() >= seq })
				if i < len(x.files) && !slices.Contains(files, x.files[i]) {
					files = append(files, x.files[i])
				}
			}
		}
		x.fmu.RUnlock()
		for _, f := range files {
			if err := x.rebuild(ctx, f); err != nil {
				return err
			}
		}
		if inOpen {
			if err := x.rebuildOpen(); err != nil {
				return err
			}
		}
		if err := x.st.ClearDeleted(seqs); err != nil {
			return err
		}
	}
}

// rebuildOpen gathers the open run again from the store.
func (x *Index) rebuildOpen() error {
	x.changeOpen()
	g := x.gatherer()
	x.bmu.Lock()
	defer x.bmu.Unlock()
	lo, through := x.open.lo, x.through.Load()
	lists := newPostingLists(0)
	err := x.st.ScanTexts(lo, through, false, func(seq uint64, text []byte) bool {
		lists.add(g.keys(text), uint16(seq-lo))
		return true
	})
	if err != nil {
		return err
	}
	x.open.lists = lists
	return nil
}

// markBad records that f failed a check while it was read: it is rebuilt
// by the next CatchUp, and searches do not narrow its range meanwhile.
func (x *Index) markBad(f *postingFile, err error) {
	x.fmu.Lock()
	defer x.fmu.Unlock()
	if _, ok := x.bad[f.path]; !ok {
		x.bad[f.path] = err
		msg := "index: a postings file failed its checks; searches read every text of its range until it is rebuilt"
		if x.readOnly {
			msg += " (this process reads the data directory only: a server, an import, compact or reindex will rebuild it)"
		}
		x.log.Error(msg, "file", filepath.Base(f.path), "err", err)
	}
}

// isBad says whether f was found corrupt (fmu held).
func (x *Index) isBad(f *postingFile) bool {
	_, ok := x.bad[f.path]
	return ok
}

// rebuildBad builds the files found corrupt again from the store.
func (x *Index) rebuildBad(ctx context.Context) error {
	x.fmu.RLock()
	var bad []*postingFile
	for _, f := range x.files {
		if x.isBad(f) {
			bad = append(bad, f)
		}
	}
	x.fmu.RUnlock()
	for _, f := range bad {
		if err := x.rebuild(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// rebuild builds file f's range again from the store and swaps the new
// file in.
func (x *Index) rebuild(ctx context.Context, f *postingFile) error {
	g := x.gatherer()
	var runs []*postingFile
	defer func() {
		for _, r := range runs {
			r.close()
			x.drop(r.path, nil)
		}
	}()
	run := uint64(x.runSpan)
	for lo := f.lo; lo <= f.hi(); lo += run {
		lists := newPostingLists(0)
		err := x.st.ScanTexts(lo, lo+run-1, false, func(seq uint64, text []byte) bool {
			lists.add(g.keys(text), uint16(seq-lo))
			return true
		})
		if err != nil {
			return err
		}
		path, err := lists.writeTo(x.dir, lo, x.runSpan)
		if err != nil {
			return err
		}
		r, err := openFile(path)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	nf := runs[0]
	if f.span != x.runSpan {
		var err error
		if nf, err = x.merge(ctx, f.lo, runs); err != nil {
			return err
		}
	} else {
		runs = nil // the run written is the file itself
	}
	x.fmu.Lock()
	for i, old := range x.files {
		if old == f {
			x.files[i] = nf
		}
	}
	delete(x.bad, f.path)
	x.gen++
	f.close()
	x.fmu.Unlock()
	x.log.Info("index: rebuilt a postings file from the store", "file", filepath.Base(nf.path))
	return nil
}

// Rebuild builds every file of the index again from the store, one at a
// time, each swapped in when written, then takes in what is new. Searches
// stay exact throughout. progress, if set, is called after each file with
// the last seq rebuilt and the mark.
func (x *Index) Rebuild(ctx context.Context, progress func(done, last uint64)) error {
	if x.readOnly {
		return fmt.Errorf("index: %s is open for reading only; rebuild it where the data directory can be written", x.dir)
	}
	x.wmu.Lock()
	x.fmu.RLock()
	files := slices.Clone(x.files)
	x.fmu.RUnlock()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			x.wmu.Unlock()
			return err
		}
		if err := x.rebuild(ctx, f); err != nil {
			x.wmu.Unlock()
			return err
		}
		if progress != nil {
			progress(f.hi(), x.through.Load())
		}
	}
	x.wmu.Unlock()
	_, err := x.CatchUp(ctx, nil)
	return err
}
