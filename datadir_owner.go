package pihistory

import (
	"fmt"
	"os"
	"syscall"
)

// Mine refuses a file or directory of a data directory (info, at path)
// that belongs to another user: whoever owns it can read the sessions, and
// could have put a token (and a server.json naming a server) of their own
// there. The server applies it to the data directory it opens (package
// datadir) and a client to the server.json and token it trusts
// (api/client), so both sides share the rule, not a copy of it.
func Mine(info os.FileInfo, path string) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to you (%d): whoever owns it can read the sessions and knows the API token; use a data directory of your own (--data, PI_HISTORY_DATA)", path, st.Uid, os.Getuid())
	}
	return nil
}
