package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAcquireMakesTheDirectoryPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // whatever the umask
	log := filepath.Join(dir, "serve.log")
	if err := os.WriteFile(log, []byte("login: http://127.0.0.1:7314/ui/login?code=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(log, 0o644)
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("mode %v after Acquire; want 0700", info.Mode().Perm())
	}
	if info, _ := os.Stat(log); info.Mode().Perm() != 0o600 {
		t.Errorf("serve.log's mode %v after Acquire; want 0600", info.Mode().Perm())
	}
	// A second owner is refused while the first holds it.
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second Acquire: %v; want ErrLocked", err)
	}
}

func TestAcquireRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to give the directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Skipf("cannot give the directory away: %v", err)
	}
	_, err := Acquire(dir)
	if err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("Acquire of another user's directory: %v", err)
	}
}
