// Command pi-history keeps the full history of Pi coding-agent sessions
// searchable, and serves the notebook, rollover and history tools built on it.
//
// Each subcommand lives in its own file and registers itself in init; this
// file holds the dispatcher and the flags every subcommand shares.
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

// command is one subcommand.
type command struct {
	name    string
	usage   string // argument synopsis, after the name
	summary string // one line for the command list
	help    string // longer text for 'pi-history help NAME'
	flags   func(fs *flag.FlagSet, g *globals)
	run     func(g *globals, args []string) error
	// errStatus is the exit status of a failure other than a usage error:
	// 1 when zero. Search uses 2, as grep does, since 1 means no match.
	errStatus int
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// globals are the flags every subcommand accepts.
type globals struct {
	data      string
	sessions  string
	logFormat string
	logLevel  string
	color     string
	stdout    io.Writer
	rawStdout io.Writer  // stdout without the terminal's stand-ins, for colour codes
	out       *outWriter // stdout at the bottom, which a command may buffer
	tty       bool       // stdout is a terminal
	stderr    io.Writer
	log       *slog.Logger
}

// exitError carries an exit status without a message (grep-style "no match").
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func (g *globals) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&g.data, "data", "", "data directory (default $PI_HISTORY_DATA, else $XDG_DATA_HOME/pi-history or ~/.local/share/pi-history)")
	fs.StringVar(&g.sessions, "sessions", "", "Pi's sessions directory, or several joined by ':' (default $PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions)")
	fs.StringVar(&g.logFormat, "log-format", "", "log format: text or json (default text on a terminal, json otherwise)")
	fs.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&g.color, "color", "auto", "colour matches: auto (on a terminal, unless NO_COLOR is set or TERM=dumb), always or never")
}

// painter returns what colours this command's output, as --color says.
func (g *globals) painter() (painter, error) {
	m, err := parseColor(g.color)
	if err != nil {
		return painter{}, err
	}
	return painter{text: g.stdout, raw: g.rawStdout, on: useColor(m, g.tty, os.Getenv)}, nil
}

func (g *globals) setupLog() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	format := g.logFormat
	if format == "" {
		format = "text"
		if f, ok := g.stderr.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
			format = "json"
		}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		g.log = slog.New(slog.NewTextHandler(g.stderr, opts))
	case "json":
		g.log = slog.New(slog.NewJSONHandler(g.stderr, opts))
	default:
		return fmt.Errorf("--log-format %q: want text or json", g.logFormat)
	}
	return nil
}

func (g *globals) dataDir() (string, error) { return datadir.Resolve(g.data) }

// openExisting opens the data directory for a command that only reads. A
// data directory that does not exist, or holds no store (a mistyped
// --data, nothing imported yet), is an error, not a new and empty store
// that answers "no match"; one this process cannot write to (a read-only
// file system, a copy without write permission) is opened for reading only.
//
// With share, it is opened for reading only first, under a shared lock:
// nothing is written (no new Pebble log and manifest, no syncs), and other
// commands that read open it alongside. When that open finds upkeep due
// (service.Service.Upkeep: entries the index lacks after a kill, say), it
// is opened again for writing, so that the upkeep is done once rather
// than on every command (decision 490).
func (g *globals) openExisting(share bool) (*service.Service, error) {
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	if err := datadir.Check(dir); err != nil {
		return nil, err
	}
	_, err = os.Stat(filepath.Join(dir, "store"))
	_, serr := os.Stat(filepath.Join(dir, client.ServerFile)) // a server answers for it
	if errors.Is(err, fs.ErrNotExist) && errors.Is(serr, fs.ErrNotExist) {
		return nil, fmt.Errorf("no pi-history data in %s: nothing was imported there; run 'pi-history import' (or 'pi-history serve') first, or check --data and PI_HISTORY_DATA", dir)
	}
	if share {
		svc, err := g.openServiceWith(openHow{readOnly: true, reading: true})
		if errors.Is(err, datadir.ErrLocked) {
			return nil, err // a server or a writer holds it
		}
		why := ""
		if err == nil {
			if why, err = svc.Upkeep(); err == nil && why == "" {
				return svc, nil
			}
			svc.Close()
		}
		g.log.Debug("opening the data directory for writing", "dir", dir, "upkeep", why, "err", err)
		if why != "" {
			return g.openToSettle(dir)
		}
	}
	svc, err := g.openServiceWith(openHow{reading: true})
	if err != nil && cannotWrite(err) {
		g.log.Debug("the data directory cannot be written; opening it for reading only", "dir", dir, "err", err)
		return g.openServiceWith(openHow{readOnly: true, reading: true})
	}
	return svc, err
}

// openToSettle opens dir for writing for a command that reads, and waits
// up to settleWait for the upkeep found due to be done (the index catching
// up after a kill, say), so that the commands after it open dir for
// reading only. Past that the command goes on: its answers are exact
// either way, and the next command that writes goes on with the upkeep.
func (g *globals) openToSettle(dir string) (*service.Service, error) {
	svc, err := g.openServiceWith(openHow{reading: true})
	if err != nil {
		if cannotWrite(err) {
			g.log.Debug("the data directory cannot be written; opening it for reading only", "dir", dir, "err", err)
			return g.openServiceWith(openHow{readOnly: true, reading: true})
		}
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	defer cancel()
	quick, cancelQuick := context.WithTimeout(ctx, settleTell)
	err = svc.Settle(quick)
	cancelQuick()
	if err != nil && ctx.Err() == nil {
		why, _ := svc.Upkeep()
		fmt.Fprintf(g.stderr, "pi-history: bringing %s up to date first (%s; up to %s)\n", dir, why, settleWait)
		err = svc.Settle(ctx)
	}
	if err != nil {
		g.log.Debug("going on before the data directory's upkeep is done", "dir", dir, "err", err)
	}
	return svc, nil
}

// settleWait is how long a command that reads waits for upkeep it found
// due (openToSettle); it says so after settleTell. Tests shorten them.
var (
	settleWait = 5 * time.Second
	settleTell = 500 * time.Millisecond
)

// cannotWrite says err is a refusal to write: a read-only file system or
// no permission.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// openService opens an existing data directory for this process to read
// and write (the maintenance commands).
func (g *globals) openService() (*service.Service, error) { return g.openServiceWith(openHow{}) }

// openHow says how openServiceWith opens the data directory.
type openHow struct {
	create   bool // make it when missing (import, serve)
	bulk     bool // for a bulk load (see service.Options)
	readOnly bool // for reading only (see service.Options)
	reading  bool // for a command that reads (search, show, export …): a server's default memory budget
}

// openServiceWith opens the data directory as how says.
func (g *globals) openServiceWith(how openHow) (*service.Service, error) {
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	sd, err := datadir.SessionsDirs(g.sessions)
	if err != nil {
		return nil, err
	}
	flush, err := flushBytes()
	if err != nil {
		return nil, err
	}
	reserve, err := reserveBytes()
	if err != nil {
		return nil, err
	}
	// A command that reads keeps to a server's default budget, with a
	// smaller block cache (decision 480: it reads most blocks once);
	// imports and maintenance keep the store's defaults, sized for
	// writing much.
	var mem service.Memory
	if how.reading {
		mem = service.SplitMemory(service.ServeMemoryBytes())
		mem.Cache = min(mem.Cache, oneShotCacheBytes)
	}
	return service.Open(service.Options{DataDir: dir, SessionsDirs: sd, Log: g.log, Bulk: how.bulk, FlushBytes: flush,
		MustExist: !how.create, ReadOnly: how.readOnly, ReserveBytes: reserve, Memory: mem, Brief: how.reading})
}

// oneShotCacheBytes is the most block cache a command that reads keeps.
const oneShotCacheBytes = 16 << 20

// reserveBytes reads PI_HISTORY_RESERVE_MB, the free space under which the
// store refuses writes (store.Options.ReserveBytes): 0 when unset (the
// default), -1 for "0" (no check).
func reserveBytes() (int64, error) {
	v := os.Getenv("PI_HISTORY_RESERVE_MB")
	if v == "" {
		return 0, nil
	}
	mb, err := strconv.Atoi(v)
	if err != nil || mb < 0 || mb > 1<<20 {
		return 0, fmt.Errorf("PI_HISTORY_RESERVE_MB=%q: want a whole number of MiB from 0 (no reserve) to 1048576 (default %d), or unset it", v, store.DefaultReserveBytes>>20)
	}
	if mb == 0 {
		return -1, nil
	}
	return int64(mb) << 20, nil
}

// flushBytes reads PI_HISTORY_FLUSH_KB, what an import stores in memory
// between flushes (0 when unset: the store's default).
func flushBytes() (int, error) { return kibFromEnv("PI_HISTORY_FLUSH_KB", store.DefaultFlushBytes) }

// kibFromEnv reads a size in KiB, 1 to 1048576, from the environment
// variable name, in bytes; 0 when it is unset. def is the default the
// error names.
func kibFromEnv(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	kb, err := strconv.Atoi(v)
	if err != nil || kb < 1 || kb > 1<<20 {
		return 0, fmt.Errorf("%s=%q: want a whole number of KiB from 1 to 1048576 (default %d), or unset it", name, v, def>>10)
	}
	return kb << 10, nil
}

// size writes a byte count for people: bytes, KB, MB or GB (powers of
// 1000, as the rates beside them), with one decimal past a thousand.
func size(b int64) string {
	switch {
	case b < 1000:
		return fmt.Sprintf("%d bytes", b)
	case b < 999_950: // 999,950 would round up to "1000.0 KB"
		return fmt.Sprintf("%.1f KB", float64(b)/1e3)
	case b < 999_950_000:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(b)/1e9)
}

// plural writes n and a noun that takes an "s" for any n but 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// heapLimit is the Go heap a command tries to stay under unless GOMEMLIMIT
// says otherwise (serve sets its own from --memory-mb): a backstop for
// imports, whose batches and the index's open run live in the Go heap.
const heapLimit = 768 << 20

func main() {
	limitMallocArenas()
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(heapLimit)
	}
	if p := os.Getenv("PI_HISTORY_CPUPROFILE"); p != "" {
		// For benchmarks: profile the whole run.
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if p := os.Getenv("PI_HISTORY_HEAPPROFILE"); p != "" {
		// For benchmarks: the heap's allocations over the whole run, and
		// what it held when the command ended.
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	os.Exit(code)
}

// commandFirst moves flags given before the command ("pi-history --data D
// search x") after it, where they are parsed: every flag, global or not,
// belongs to the command's flag set. Arguments with no command name among
// them are left as they are (the unknown command is reported).
func commandFirst(args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") || args[0] == "--version" || args[0] == "-h" || args[0] == "--help" {
		return args
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		if _, ok := commands[a]; ok && !strings.HasPrefix(a, "-") {
			out := append([]string{a}, args[:i]...)
			return append(out, args[i+1:]...)
		}
	}
	return args
}

func run(args []string, stdout, stderr io.Writer) int {
	tty := isTerminal(stdout)
	out := &outWriter{w: stdout}
	defer out.flush()
	stdout = out
	if tty {
		ts := &ttySafe{w: stdout}
		defer ts.Flush()
		stdout = ts
	}
	g := &globals{stdout: stdout, stderr: stderr, rawStdout: out, out: out, tty: tty}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		printUsage(stdout)
		return 0
	}
	args = commandFirst(args)
	name := args[0]
	if name == "--version" {
		name, args = "version", []string{"version"}
	}
	if name == "help" {
		name = args[1]
		args = []string{name, "--help"}
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "pi-history: unknown command %q%s (see 'pi-history help' for the list)\n", name, suggest(name))
		return 2
	}
	fs := flag.NewFlagSet("pi-history "+c.name, flag.ContinueOnError)
	// The parser's own messages are dropped: asked-for help goes to stdout
	// (so that it pipes into grep or less), and a flag error is one line.
	fs.SetOutput(io.Discard)
	g.addFlags(fs)
	if c.flags != nil {
		c.flags(fs, g)
	}
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: pi-history %s %s\n\n%s\n", c.name, c.usage, c.summary)
		if c.help != "" {
			fmt.Fprintf(out, "\n%s\n", strings.TrimSpace(c.help))
		}
		fmt.Fprintf(out, "\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(interleave(fs, args[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "pi-history %s: %v\n(see 'pi-history %s --help')\n", c.name, err, c.name)
		return 2
	}
	if err := g.setupLog(); err != nil {
		fmt.Fprintln(stderr, "pi-history:", err)
		return 2
	}
	err := c.run(g, fs.Args())
	var ee exitError
	if out.err != nil && (err == nil || errors.As(err, &ee)) {
		// Printed output that did not all arrive (a full disk, a closed
		// pipe) is a failure, whatever the command thought of its result.
		fmt.Fprintf(stderr, "pi-history %s: writing the output failed: %v\n", c.name, out.err)
		return cmp.Or(c.errStatus, 1)
	}
	if err != nil {
		if errors.As(err, &ee) {
			return ee.code
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "pi-history %s: %s\n(see 'pi-history %s --help')\n", c.name, ue.msg, c.name)
			return 2
		}
		fmt.Fprintf(stderr, "pi-history %s: %v\n", c.name, err)
		return cmp.Or(c.errStatus, 1)
	}
	return 0
}

// outWriter is standard output, remembering the first error a write
// returned: most commands print with fmt and do not look at each write.
type outWriter struct {
	w   io.Writer
	err error
	bw  *bufio.Writer // set by buffer
}

func (o *outWriter) Write(p []byte) (int, error) {
	if o.bw != nil {
		return o.noted(o.bw.Write(p))
	}
	return o.noted(o.w.Write(p))
}

// WriteString is Write without copying s first.
func (o *outWriter) WriteString(s string) (int, error) {
	if o.bw != nil {
		return o.noted(o.bw.WriteString(s))
	}
	return o.noted(io.WriteString(o.w, s))
}

// noted keeps err when it is the first, and returns n and err.
func (o *outWriter) noted(n int, err error) (int, error) {
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

// buffer makes o hold what is written until flush, for a command that
// prints much in many small writes (a search's every hit: a system call
// each, which a profile of 'search --all' showed among its largest costs;
// docs/measurements/2026-12-07-engine-on-disk.md, run 1).
func (o *outWriter) buffer() {
	if o.bw == nil {
		o.bw = bufio.NewWriterSize(o.w, 64<<10)
	}
}

// flush writes out what o holds.
func (o *outWriter) flush() {
	if o.bw == nil {
		return
	}
	if err := o.bw.Flush(); err != nil && o.err == nil {
		o.err = err
	}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// interleave moves flags that follow positional arguments to the front, so
// 'pi-history search NEEDLE --json' works as users expect. A lone "--" ends
// flag parsing: everything after it is positional (a needle may start with -).
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 >= len(args) {
					// A value flag with nothing after it: left last, so that
					// the parser says it needs an argument (before the "--"
					// added below, it took that for its value).
					return flags
				}
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(append(flags, "--"), pos...)
}

// suggest names the command a mistyped one was probably meant to be, as
// "; did you mean ..."; or "" when none is close: one it begins, or one
// within two edits of it.
func suggest(name string) string {
	var best string
	bestD := 3
	for n := range commands {
		d := editDistance(name, n)
		if len(name) >= 2 && strings.HasPrefix(n, name) {
			d = 1
		}
		if d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `pi-history keeps the full history of Pi coding-agent sessions searchable.

It reads Pi's session journals (~/.pi/agent/sessions) into a local store,
indexes them for literal (grep -F style) search, and serves a web UI and the
HTTP API that the Pi extension uses for notes, new context windows and
history look-ups.

usage: pi-history COMMAND [flags] [args]

commands:
`)
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Start here:
  pi-history serve               watch Pi's sessions and serve the API and web UI
  pi-history search 'ErrCartEmpty'   find text in every session
  pi-history help COMMAND        flags and examples for one command

Environment:
  PI_HISTORY_DATA                data directory (as --data)
  PI_CODING_AGENT_DIR, PI_CODING_AGENT_SESSION_DIR   where Pi keeps sessions
  GOMEMLIMIT                     Go heap target (default 768MiB; serve: its
                                 --memory-mb less Pebble's cache and memtables)
  GOGC                           collector pace (default 100; search: 400)
  PI_HISTORY_FLUSH_KB            what an import keeps in memory between flushes
                                 (default 16384); a killed import reads that
                                 much again next time
  PI_HISTORY_RESERVE_MB          free space under which writes stop until more
                                 is freed (default 128; 0: none, and a full disk
                                 stops writes until the server restarts itself)
`)
}
