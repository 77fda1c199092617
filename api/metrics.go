package api

import (
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler

	cache  sync.Map // obsKey → *observers
	cached atomic.Int32
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pi_history_http_requests_total",
		Help: "HTTP requests by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pi_history_http_request_duration_seconds",
		Help:    "HTTP request latency by route pattern and method.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	m.reg.MustRegister(m.requests, m.latency, &storeCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
	return m
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	o := m.seriesFor(route, methodLabel(method), status)
	o.requests.Inc()
	o.latency.Observe(d.Seconds())
}

// methodLabel keeps the standard HTTP methods and folds any other into
// "OTHER": the method comes from the client (before authentication), and
// each distinct label value is a series Prometheus keeps forever.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// obsKey names one series pair: the request counter of (route, method,
// code) and the latency histogram of (route, method).
type obsKey struct {
	route, method string
	code          int
}

// observers are a series pair resolved once, so a request does not hash
// and look up its label values (nor format its status) every time.
type observers struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// maxCachedObservers bounds the cache: routes are patterns, but methods
// come from clients, and a stream of odd ones must not grow it forever.
const maxCachedObservers = 512

func (m *metrics) seriesFor(route, method string, code int) *observers {
	k := obsKey{route, method, code}
	if v, ok := m.cache.Load(k); ok {
		return v.(*observers)
	}
	o := &observers{
		requests: m.requests.WithLabelValues(route, method, strconv.Itoa(code)),
		latency:  m.latency.WithLabelValues(route, method),
	}
	if m.cached.Load() < maxCachedObservers {
		if v, loaded := m.cache.LoadOrStore(k, o); loaded {
			return v.(*observers)
		}
		m.cached.Add(1)
	}
	return o
}

// storeCollector reads the store's figures at scrape time.
type storeCollector struct{ s *Server }

var (
	descIndexLag    = prometheus.NewDesc("pi_history_index_lag_entries", "Entries the search index has still to take in (search scans them meanwhile); 0 once it has caught up.", nil, nil)
	descLastSeq     = prometheus.NewDesc("pi_history_store_last_seq", "Highest sequence number stored.", nil, nil)
	descIngestLag   = prometheus.NewDesc("pi_history_ingest_lag_bytes", "Bytes of known journal files not read into the store yet.", nil, nil)
	descStoreBytes  = prometheus.NewDesc("pi_history_store_bytes", "Size of the store on disk.", nil, nil)
	descFiles       = prometheus.NewDesc("pi_history_journal_files", "Journal files known to the store.", nil, nil)
	descSkipped     = prometheus.NewDesc("pi_history_skipped_lines", "Journal lines skipped as unreadable, in total.", nil, nil)
	descWatchIngest = prometheus.NewDesc("pi_history_watcher_reads_total", "Journal reads done by the live watcher.", nil, nil)
	descWatchErrors = prometheus.NewDesc("pi_history_watcher_errors_total", "Failed journal reads and watch errors of the live watcher.", nil, nil)
	descWatchSkips  = prometheus.NewDesc("pi_history_watcher_skips_total", "Files, directories and links the live watcher left out, and journals it skipped lines of: each path and cause once.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIndexLag, descLastSeq, descIngestLag, descStoreBytes, descFiles, descSkipped, descWatchIngest, descWatchErrors, descWatchSkips} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	is := s.indexStatus()
	ch <- prometheus.MustNewConstMetric(descIndexLag, prometheus.GaugeValue, float64(is.Lag))
	ch <- prometheus.MustNewConstMetric(descLastSeq, prometheus.GaugeValue, float64(is.LastSeq))
	ch <- prometheus.MustNewConstMetric(descStoreBytes, prometheus.GaugeValue, float64(s.svc.Store.DiskSize()))
	if files, err := s.svc.Store.Files(); err == nil {
		var lag int64
		skipped := 0
		for _, f := range files {
			if info, err := os.Stat(f.Path); err == nil && info.Size() > f.Offset {
				lag += info.Size() - f.Offset
			}
			skipped += f.Skipped
		}
		ch <- prometheus.MustNewConstMetric(descIngestLag, prometheus.GaugeValue, float64(lag))
		ch <- prometheus.MustNewConstMetric(descFiles, prometheus.GaugeValue, float64(len(files)))
		ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.GaugeValue, float64(skipped))
	}
	if s.o.Watcher != nil {
		ws := s.o.Watcher.Status()
		ch <- prometheus.MustNewConstMetric(descWatchIngest, prometheus.CounterValue, float64(ws.Ingests))
		ch <- prometheus.MustNewConstMetric(descWatchErrors, prometheus.CounterValue, float64(ws.Errors))
		ch <- prometheus.MustNewConstMetric(descWatchSkips, prometheus.CounterValue, float64(ws.Skips))
	}
}
