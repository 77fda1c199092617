// Command apiload measures the HTTP API under load, on loopback only and
// bounded in time and count.
//
// It builds a synthetic corpus (or uses -corpus, e.g. one written by
// ../shared/tools/picorpus), starts an in-process server on 127.0.0.1 over a
// fresh data directory, imports the corpus through POST /v1/import, then runs
// selective literal searches (each needle is in a handful of entries) from
// -c concurrent clients for -duration, while a writer appends entries to live
// journals that the server's watcher reads. At the end it checks that every
// entry the writer appended is searchable, and prints searches/s, latency
// percentiles, the process's CPU time per search, its memory at the end of
// the load (Go heap, anonymous, RSS, peak RSS) and errors.
//
// Client and server share the machine, so by default the searchers use a
// lean HTTP/1.1 client (-client raw, see rawSearcher) that checks every
// answer but costs little; -client std uses the api/client package over
// net/http.Transport, as the CLI does. -cpuprofile and -blockprofile profile
// the search phase (client and server are one process).
//
//	go run ./bench/apiload -duration 10s
//	go run ./bench/apiload -duration 10s -client std -cpuprofile /tmp/cpu.prof
//	go run ./bench/apiload -corpus /tmp/corpus -needles ReadHeaderTimeout,ErrShortWrite
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/bench/internal/benchkit"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

func main() {
	corpus := flag.String("corpus", "", "directory of journals to import (default: generate one)")
	needles := flag.String("needles", "", "comma-separated needles for -corpus (default: the generated corpus's rare words)")
	sessions := flag.Int("sessions", 200, "generated corpus: sessions")
	perSession := flag.Int("entries", 500, "generated corpus: entries per session")
	conc := flag.Int("c", 16, "concurrent searchers")
	duration := flag.Duration("duration", 10*time.Second, "how long to search (at most 2m)")
	maxSearches := flag.Int("max", 500_000, "stop after this many searches")
	writeRate := flag.Int("write-rate", 100, "entries per second the writer appends to live journals")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	direct := flag.Bool("direct", false, "call the search engine in-process instead of over HTTP (to see the API's share)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the search phase (client and server, one process) to this file")
	flag.StringVar(&memProfile, "memprofile", "", "write the allocations of the search phase to this file (and those before it to FILE.base: go tool pprof -sample_index=alloc_space -base FILE.base BINARY FILE)")
	flag.StringVar(&blockProfile, "blockprofile", "", "write a blocking profile (channel, mutex and select waits) of the search phase to this file")
	flag.StringVar(&clientKind, "client", "raw", "raw: lean HTTP/1.1 client, one kept-alive connection per searcher, every response checked;\n"+
		"std: the api/client package over net/http.Transport (what the CLI uses; decodes every response)")
	flag.IntVar(&checkEvery, "check", 8, "raw client: decode every Nth response in full and check its snippets (1: every response)")
	flag.Parse()
	if clientKind != "raw" && clientKind != "std" {
		fmt.Fprintln(os.Stderr, "apiload: -client must be raw or std")
		os.Exit(2)
	}
	if *duration > 2*time.Minute {
		*duration = 2 * time.Minute
	}
	if err := run(*corpus, *needles, *sessions, *perSession, *conc, *duration, *maxSearches, *writeRate, *keep, *direct); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

var (
	cpuProfile   string
	memProfile   string
	blockProfile string
	clientKind   string
	checkEvery   int
)

// One piece (224 lines): one load run, read top to bottom (a scratch
// data directory, a server and watcher on it, the corpus imported, the
// searchers and a writer for the duration, the report, then every
// appended entry checked searchable); the goroutines share the counters
// and deadline it sets up, and its defers stop the server and watcher.
func run(corpus, needleList string, nSessions, perSession, conc int, duration time.Duration, maxSearches, writeRate int, keep, direct bool) error {
	tmp, err := os.MkdirTemp("", "apiload-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Println("directory:", tmp)
	}
	var needles []string
	if corpus == "" {
		corpus = filepath.Join(tmp, "corpus")
		t0 := time.Now()
		needles, err = generate(corpus, nSessions, perSession)
		if err != nil {
			return err
		}
		fmt.Printf("corpus: %d sessions x %d entries generated in %.1fs\n", nSessions, perSession, time.Since(t0).Seconds())
	}
	if needleList != "" {
		needles = strings.Split(needleList, ",")
	}
	if len(needles) == 0 {
		return fmt.Errorf("no needles: pass -needles with -corpus")
	}
	live := filepath.Join(tmp, "sessions")
	data := filepath.Join(tmp, "data")
	os.MkdirAll(live, 0o755)

	svc, err := service.Open(service.Options{DataDir: data, SessionsDirs: []string{live}})
	if err != nil {
		return err
	}
	defer svc.Close()
	token, _, _, err := api.LoadOrCreateToken(data)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		return err
	}
	serial := ingest.NewSerial(svc.Store)
	watcher := ingest.NewWatcher(svc.Store, []string{live}, ingest.WatchOptions{Serial: serial})
	engine := search.New(svc.Store, svc.Index)
	srv, err := api.New(api.Options{Service: svc, Engine: engine, Token: token,
		Addr: ln.Addr().String(), Watcher: watcher, Serial: serial, MaxInFlight: 4 * conc})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, api.Timeouts{Write: 10 * time.Minute}) }()
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); watcher.Run(wctx) }()
	defer func() { cancel(); <-served; wcancel(); <-wdone }()

	// Keep at least one idle connection per searcher, or they churn.
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: conc * 2}}
	c := client.New("http://"+ln.Addr().String(), token).WithHTTPClient(hc)

	t0 := time.Now()
	sum, err := c.Import(ctx, []string{corpus})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	el := time.Since(t0).Seconds()
	fmt.Printf("import: %d files, %d entries, %.1f MB in %.1fs (%.0f entries/s, %.1f MB/s)\n",
		sum.Files, sum.Entries, float64(sum.Bytes)/1e6, el, float64(sum.Entries)/el, float64(sum.Bytes)/1e6/el)

	// The writer appends to a few live journals while the searchers run.
	var written []string
	var wmu sync.Mutex
	stopWriter := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer(live, writeRate, stopWriter, &wmu, &written) }()

	var reqs [][]byte
	if !direct && clientKind == "raw" {
		if reqs, err = prepareRequests(ln.Addr().String(), token, needles); err != nil {
			return err
		}
	}
	var (
		count, errs, respBytes atomic.Int64
		lmu                    sync.Mutex
		lat                    []time.Duration
		firstErr               atomic.Value
	)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	if blockProfile != "" {
		runtime.SetBlockProfileRate(int(50 * time.Microsecond))
	}
	if memProfile != "" {
		if err := writeProfile("allocs", memProfile+".base"); err != nil {
			return err
		}
	}
	cpu0 := cpuTime()
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			local := make([]time.Duration, 0, 1<<14)
			var rs *rawSearcher
			if reqs != nil {
				rs = &rawSearcher{addr: ln.Addr().String(), reqs: reqs, needles: needles, checkEvery: checkEvery}
				defer func() { respBytes.Add(rs.bytes); rs.close() }()
			}
			for time.Now().Before(deadline) && count.Add(1) <= int64(maxSearches) {
				i := rng.IntN(len(needles))
				n := needles[i]
				t := time.Now()
				var err error
				switch {
				case direct:
					_, err = engine.Search(ctx, &search.Request{Needle: n, Scope: search.ScopeAll, Limit: 20})
				case rs != nil:
					err = rs.search(i)
				default:
					_, err = c.Search(ctx, &search.Request{Needle: n, Scope: search.ScopeAll, Limit: 20})
				}
				local = append(local, time.Since(t))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
			lmu.Lock()
			lat = append(lat, local...)
			lmu.Unlock()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	cpu := cpuTime() - cpu0
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if blockProfile != "" {
		runtime.SetBlockProfileRate(0)
		if err := writeProfile("block", blockProfile); err != nil {
			return err
		}
	}
	if memProfile != "" {
		if err := writeProfile("allocs", memProfile); err != nil {
			return err
		}
	}
	close(stopWriter)
	if err := <-writerDone; err != nil {
		return fmt.Errorf("writer: %w", err)
	}

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	mode := "over HTTP, " + clientKind + " client"
	if direct {
		mode = "in process (-direct)"
	}
	fmt.Printf("searches: %d in %.1fs at concurrency %d %s = %.0f searches/s\n", len(lat), took.Seconds(), conc, mode, float64(len(lat))/took.Seconds())
	if b := respBytes.Load(); b > 0 {
		fmt.Printf("responses: %s bytes on average\n", avgBytes(b, int64(len(lat))))
	}
	fmt.Printf("latency: p50 %v  p90 %v  p99 %v  max %v\n", pct(.50).Round(10*time.Microsecond), pct(.90).Round(10*time.Microsecond),
		pct(.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond))
	if len(lat) > 0 && cpu > 0 {
		fmt.Printf("cpu: %.0fµs per search (this process, client and server, user+sys; %.2f of %d cores busy)\n",
			float64(cpu.Microseconds())/float64(len(lat)), cpu.Seconds()/took.Seconds(), runtime.NumCPU())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if m, err := benchkit.ReadMemory(os.Getpid()); err == nil {
		fmt.Printf("memory at the end of the load (this process, client and server): Go heap %s MB, anonymous %s MB, RSS %s MB (file-backed %s MB), peak RSS %s MB\n",
			benchkit.MB(int64(ms.HeapInuse)), benchkit.MB(m.Anon), benchkit.MB(m.RSS), benchkit.MB(m.File), benchkit.MB(m.Peak))
	}
	fmt.Printf("errors: %d", errs.Load())
	if v := firstErr.Load(); v != nil {
		fmt.Printf(" (first: %s)", v)
	}
	fmt.Println()

	// Every entry the writer appended must be searchable, within a grace period.
	missing := len(written)
	grace := time.Now().Add(5 * time.Second)
	for missing > 0 && time.Now().Before(grace) {
		missing = 0
		for _, tok := range written {
			r, err := c.Search(ctx, &search.Request{Needle: tok, Scope: search.ScopeAll, Limit: 1})
			if err != nil || len(r.Hits) == 0 {
				missing++
			}
		}
		if missing > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	fmt.Printf("writer: %d entries appended during the load, %d searchable at the end", len(written), len(written)-missing)
	if missing == 0 {
		fmt.Println(" (all)")
	} else {
		fmt.Printf(" (%d MISSING)\n", missing)
	}
	st, _ := c.Stats(ctx)
	fmt.Printf("store: %d sessions, %d entries, %.1f MB store, %.1f MB index, index lag %d\n",
		st.Sessions, st.Entries, float64(st.StoreBytes)/1e6, float64(st.IndexBytes)/1e6, st.IndexLag)
	return nil
}

// writer appends entries with unique tokens to four live journals at rate
// entries per second until stop is closed.
func writer(dir string, rate int, stop chan struct{}, mu *sync.Mutex, written *[]string) error {
	const files = 4
	paths := make([]string, files)
	last := make([]string, files)
	for i := range files {
		proj := filepath.Join(dir, fmt.Sprintf("--live-%d--", i))
		os.MkdirAll(proj, 0o755)
		paths[i] = filepath.Join(proj, fmt.Sprintf("live-%d.jsonl", i))
		if err := os.WriteFile(paths[i], []byte(header(fmt.Sprintf("live-%d", i))+"\n"), 0o644); err != nil {
			return err
		}
	}
	if rate <= 0 {
		return nil
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		i := n % files
		tok := fmt.Sprintf("wrtok%08dz", n)
		id := fmt.Sprintf("w%07d", n)
		f, err := os.OpenFile(paths[i], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(message(id, last[i], "user", "live entry "+tok+" appended during the load") + "\n")
		f.Close()
		if err != nil {
			return err
		}
		last[i] = id
		mu.Lock()
		*written = append(*written, tok)
		mu.Unlock()
	}
}

func header(sid string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-03-01T10:00:00.000Z","cwd":"/home/dev/%s"}`, sid, sid)
}

func message(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	content := fmt.Sprintf("%q", text)
	if role == "assistant" {
		content = fmt.Sprintf(`[{"type":"text","text":%q}]`, text)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T10:00:01.000Z","message":{"role":%q,"content":%s}}`,
		id, p, role, content)
}

var words = strings.Fields(`the a of to and in is it that for on with as this be are by not from or have an was
but at which can if more when will all one has so there their what up out about into than them then some
function return error value type struct package import string slice buffer reader writer handler request
response server client context cancel deadline timeout index store search entry session journal branch`)

// generate writes sessions journals of perSession entries each. Every entry
// carries one rare word, shared by about five entries in all; those words
// are the needles.
func generate(dir string, sessions, perSession int) ([]string, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	rare := make([]string, max(1, sessions*perSession/5))
	for i := range rare {
		b := make([]byte, 9)
		for k := range b {
			b[k] = byte('a' + rng.IntN(26))
		}
		rare[i] = string(b)
	}
	for s := range sessions {
		proj := filepath.Join(dir, fmt.Sprintf("--home-dev-p%d--", s%20))
		if err := os.MkdirAll(proj, 0o755); err != nil {
			return nil, err
		}
		var b strings.Builder
		sid := fmt.Sprintf("gen-%05d", s)
		b.WriteString(header(sid) + "\n")
		parent := ""
		for e := range perSession {
			var t strings.Builder
			n := 20 + rng.IntN(120)
			for k := range n {
				if k == n/2 {
					t.WriteString(rare[rng.IntN(len(rare))])
				} else {
					t.WriteString(words[rng.IntN(len(words))])
				}
				t.WriteByte(' ')
			}
			role := "user"
			if e%2 == 1 {
				role = "assistant"
			}
			id := fmt.Sprintf("%s-%05d", sid, e)
			b.WriteString(message(id, parent, role, t.String()) + "\n")
			parent = id
		}
		if err := os.WriteFile(filepath.Join(proj, sid+".jsonl"), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return rare, nil
}

func writeProfile(name, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
