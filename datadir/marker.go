package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Marker is the file pi-history writes into every data directory it makes
// or adopts. A directory without it that holds anything else is not a data
// directory of pi-history, and nothing in it is created or changed.
const Marker = "pi-history.datadir"

// markerText is the marker's content: for a person who finds the file.
const markerText = "This directory holds pi-history's data (its store, index, API token and ledger).\n" +
	"pi-history only changes a directory that holds this file. Delete the whole directory to delete the history.\n"

// ownNames are the names pi-history (and the Pi extension, for serve.log)
// keeps directly in a data directory. A directory holding only these is one
// that an older pi-history made before the marker existed, and is adopted;
// only these are ever made private.
var ownNames = []string{
	"store", "index", "index.rebuild", "index.old", "owner.lock", "api-token", "server.json",
	"note-context.json", "note-context-ledger.jsonl", "ledger.jsonl", "serve.log", "open-login.html", Marker,
}

// tempPrefixes are the names of files pi-history writes and renames into
// place, which a crash can leave behind.
var tempPrefixes = []string{".open-login-", ".server-"}

func isOwnName(name string) bool {
	if slices.Contains(ownNames, name) {
		return true
	}
	for _, p := range tempPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// NoHistoryError says a data directory does not exist, for a command that
// only reads.
type NoHistoryError struct{ Dir string }

func (e *NoHistoryError) Error() string {
	return fmt.Sprintf("no pi-history data in %s yet (the directory does not exist); run 'pi-history import' or 'pi-history serve' to create it, or check --data and PI_HISTORY_DATA", e.Dir)
}

// ErrNoHistory matches a *NoHistoryError with errors.Is.
var ErrNoHistory = errors.New("no history yet")

func (e *NoHistoryError) Is(target error) bool { return target == ErrNoHistory }

// ForeignError says a directory given as the data directory holds files
// pi-history did not make. Nothing in it was created or changed.
type ForeignError struct {
	Dir    string
	Sample []string // a few of the names found in it
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s is not a pi-history data directory: it holds other files (%s) and no %s marker, so pi-history changed nothing in it; "+
		"give --data (or PI_HISTORY_DATA) a new or empty directory, such as %s",
		e.Dir, strings.Join(e.Sample, ", "), Marker, filepath.Join(e.Dir, "pi-history"))
}

// ErrForeign matches a *ForeignError with errors.Is.
var ErrForeign = errors.New("not a pi-history data directory")

func (e *ForeignError) Is(target error) bool { return target == ErrForeign }

// Check says, writing nothing, whether dir can be used as a data directory:
// nil for one with the marker or one Prepare would adopt, else the error
// Prepare would give (*NoHistoryError for a missing one).
func Check(dir string) error {
	_, marked, err := inspect(dir)
	if err != nil || marked {
		return err
	}
	return adoptable(dir)
}

// inspect stats dir: its info, and whether it holds the marker. A missing
// dir is a *NoHistoryError; one that is not a directory, or belongs to
// another user, is refused.
func inspect(dir string) (os.FileInfo, bool, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, &NoHistoryError{Dir: dir}
	}
	if err != nil {
		return nil, false, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, false, fmt.Errorf("data directory %s is not a directory; give --data (or PI_HISTORY_DATA) a directory", dir)
	}
	if err := Mine(info, dir); err != nil {
		return nil, false, err
	}
	_, err = os.Lstat(filepath.Join(dir, Marker))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("data directory %s: read its marker: %w", dir, err)
	}
	return info, err == nil, nil
}

// Prepare makes sure dir is a data directory of pi-history before anything
// is written to it, and keeps what it holds private to its owner:
//   - a missing directory is created (mode 0700, with its marker) when
//     create is set, else it is a *NoHistoryError;
//   - a directory with the marker is pi-history's: it and the files
//     pi-history keeps in it are made private if others may read them;
//   - an empty directory, or one holding only what pi-history keeps in a
//     data directory (made by a version before the marker), is adopted:
//     the marker is written and it is made private as above;
//   - any other directory is a *ForeignError, and nothing in it changes.
//
// A directory that belongs to another user is refused in every case.
func Prepare(dir string, create bool) error { return prepare(dir, create, false) }

// prepare is Prepare; readOnly lets a directory this process cannot write
// to pass (with its marker, or one it would adopt) without the marker
// written or modes changed.
func prepare(dir string, create, readOnly bool) error {
	info, marked, err := inspect(dir)
	var missing *NoHistoryError
	if errors.As(err, &missing) && create {
		if err := mkdirSynced(dir); err != nil {
			return fmt.Errorf("create data directory %s: %w", dir, err)
		}
		return writeMarker(dir)
	}
	if err != nil {
		return err
	}
	if !marked {
		if err := adoptable(dir); err != nil {
			return err
		}
		if err := writeMarker(dir); err != nil && !(readOnly && cannotWrite(err)) {
			return err
		}
	}
	if err := makePrivate(dir, info); err != nil && !(readOnly && cannotWrite(err)) {
		return err
	}
	return nil
}

// adoptable returns nil when dir holds nothing but what pi-history keeps
// in a data directory, else a *ForeignError.
func adoptable(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory %s: list it: %w", dir, err)
	}
	var foreign []string
	for _, e := range ents {
		if !isOwnName(e.Name()) || !looksOwn(dir, e) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	if len(foreign) > 3 {
		foreign = append(foreign[:3], "…")
	}
	return &ForeignError{Dir: dir, Sample: foreign}
}

// looksOwn checks that an entry with one of pi-history's names is what
// pi-history would have put there: a store is a Pebble directory, an index
// a Bleve one (an index without its meta file is removed as half-made when
// opened, so a stranger's "index" directory must not pass), files are files.
func looksOwn(dir string, e fs.DirEntry) bool {
	p := filepath.Join(dir, e.Name())
	switch e.Name() {
	case "store":
		return e.IsDir() && (isEmptyDir(p) || exists(filepath.Join(p, "CURRENT")) || hasPrefixed(p, "MANIFEST-"))
	case "index", "index.rebuild", "index.old":
		return e.IsDir() && (isEmptyDir(p) || exists(filepath.Join(p, "index_meta.json")))
	}
	return e.Type().IsRegular()
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func isEmptyDir(p string) bool {
	ents, err := os.ReadDir(p)
	return err == nil && len(ents) == 0
}

func hasPrefixed(dir, prefix string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			return true
		}
	}
	return false
}

// writeMarker writes the marker into dir, synced, and makes dir private:
// pi-history made or adopted it.
func writeMarker(dir string) error {
	p := filepath.Join(dir, Marker)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("data directory %s: write its marker %s: %w", dir, Marker, err)
	}
	_, werr := f.WriteString(markerText)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close(), syncDir(dir)); err != nil {
		return fmt.Errorf("data directory %s: write its marker %s: %w", dir, Marker, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: make it private: %w", dir, err)
	}
	return nil
}

// makePrivate takes group and other bits from dir (whose info is given) and
// from the files pi-history keeps in it; other files are left as they are.
// Files an older version (or the Pi extension's serve.log) left readable
// are made private for whoever reaches them another way (a hard link, a
// path opened earlier).
func makePrivate(dir string, info os.FileInfo) error {
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data directory %s can be read by others (mode %v) and cannot be made private: %w", dir, info.Mode().Perm(), err)
		}
	}
	for _, name := range ownNames {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("%s can be read by others (mode %v) and cannot be made private: %w", p, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// cannotWrite says err is a refusal to write: a read-only file system or
// no permission.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// mkdirSynced makes dir (mode 0700) and the parents it lacks, and syncs
// the directory holding each one it made: a power cut soon after could
// otherwise take a new directory's name away, and everything synced into
// it with it.
func mkdirSynced(dir string) error {
	var made []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Stat(d); err == nil {
			break
		}
		made = append(made, d)
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range made {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir syncs a directory's entries to disk.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
