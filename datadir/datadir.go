// Package datadir finds pi-history's data directory and Pi's sessions
// directory, and makes sure one process at a time owns the data.
//
// Layout of the data directory:
//
//	store/        Pebble: the source of truth
//	index/        Bleve: trigram index, rebuildable from store/
//	owner.lock    held (flock) by the owning process; holds its pid
//	api-token     the API's bearer token (mode 0600)
//	server.json   where the running server listens
//	note-context.json          the rollover configuration (optional; the user writes it)
//	note-context-ledger.jsonl  the rollover ledger
//	pi-history.datadir  the marker: pi-history made (or adopted) this directory
//
// pi-history changes nothing in a directory it did not make: see Prepare.
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	pihistory "github.com/pi-history/pi-history"
)

// Resolve picks the data directory: flag, else $PI_HISTORY_DATA, else
// $XDG_DATA_HOME/pi-history, else ~/.local/share/pi-history.
func Resolve(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if v := os.Getenv("PI_HISTORY_DATA"); v != "" {
		return filepath.Abs(v)
	}
	if v := os.Getenv("XDG_DATA_HOME"); v != "" {
		return filepath.Join(v, "pi-history"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a data directory: no --data, PI_HISTORY_DATA or home directory (%w)", err)
	}
	return filepath.Join(home, ".local", "share", "pi-history"), nil
}

// SessionsDirs returns the directories Pi writes journals to: the flag's
// if given, else $PI_CODING_AGENT_SESSION_DIR, else
// $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions.
func SessionsDirs(flag string) ([]string, error) {
	if flag != "" {
		var out []string
		for _, d := range strings.Split(flag, string(os.PathListSeparator)) {
			if d == "" {
				continue
			}
			a, err := filepath.Abs(d)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	}
	if v := os.Getenv("PI_CODING_AGENT_SESSION_DIR"); v != "" {
		a, err := filepath.Abs(v)
		return []string{a}, err
	}
	if v := os.Getenv("PI_CODING_AGENT_DIR"); v != "" {
		a, err := filepath.Abs(filepath.Join(v, "sessions"))
		return []string{a}, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("cannot find Pi's sessions directory: no --sessions and no home directory (%w)", err)
	}
	return []string{filepath.Join(home, ".pi", "agent", "sessions")}, nil
}

// Lock is the held ownership of a data directory.
type Lock struct {
	f    *os.File
	Path string
}

// LockedError says another process owns the data directory.
type LockedError struct {
	Dir string
	PID int
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s (a running 'pi-history serve'?); stop it, or use another --data", e.Dir, who)
}

// ErrLocked matches a *LockedError with errors.Is.
var ErrLocked = errors.New("data directory in use")

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Acquire takes ownership of dir for a process that may write to it,
// creating the directory when it is missing (see Prepare). It is
// AcquireWith(dir, Mode{Create: true}).
func Acquire(dir string) (*Lock, error) { return AcquireWith(dir, Mode{Create: true}) }

// Mode says how AcquireWith takes a data directory.
type Mode struct {
	// Create makes a missing data directory (import, serve). Without it a
	// missing directory is a *NoHistoryError.
	Create bool
	// Shared takes the lock for reading only, and succeeds on a directory
	// this process cannot write to (a read-only file system, a copy
	// handed over without write permission): no file is created or
	// changed. Readers still exclude a writer, and a writer them.
	Shared bool
}

// AcquireWith takes ownership of dir as m says. The directory must be a
// data directory of pi-history (Prepare); it must belong to this user
// (whoever owns it could have put a token of their own there, or read what
// is written).
func AcquireWith(dir string, m Mode) (*Lock, error) {
	if err := prepare(dir, m.Create, m.Shared); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "owner.lock")
	flag, how := os.O_RDWR|os.O_CREATE, syscall.LOCK_EX
	if m.Shared {
		flag, how = os.O_RDONLY, syscall.LOCK_SH
	}
	f, err := os.OpenFile(p, flag, 0o600)
	if m.Shared && errors.Is(err, fs.ErrNotExist) {
		// Nobody ever owned it for writing, and this process may not
		// create the lock file: there is no writer to exclude.
		return &Lock{Path: p}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the lock file %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(p)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		f.Close()
		return nil, &LockedError{Dir: dir, PID: pid}
	}
	if !m.Shared {
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
	}
	return &Lock{f: f, Path: p}, nil
}

// Mine refuses a file or directory of a data directory (info, at path)
// that belongs to another user; see pihistory.Mine, which clients apply too.
func Mine(info os.FileInfo, path string) error { return pihistory.Mine(info, path) }

// Owner returns the pid recorded by the owner of dir, if it is locked.
func Owner(dir string) (int, bool) {
	l, err := AcquireWith(dir, Mode{Shared: true})
	if err == nil {
		l.Release()
		return 0, false
	}
	var le *LockedError
	if errors.As(err, &le) {
		return le.PID, true
	}
	return 0, false
}

// Release gives up ownership.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
