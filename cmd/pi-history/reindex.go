package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/service"
)

func init() {
	register(&command{
		name:    "reindex",
		usage:   "",
		summary: "rebuild the search index from the store",
		help: `Rewrites the per-entry trigram sketches that an older version stored
(or never stored) in the current format, then builds a new index from the
store in a directory beside the current one and swaps it in when complete.
Use it after an upgrade that changes the sketch or index format (searches
over entries stored before then read more texts until it is run; an index
made before selected trigrams keeps every trigram, twice the postings:
'pi-history stats' says when the index is of an older format), or if the
index is damaged. Entries themselves are not changed; the copies of
their records that versions before 2026-11-30 kept beside each session's
list of entries are dropped (about 40 MB per million entries).
While 'pi-history serve' runs, the server does it (POST
/v1/maintenance/reindex): searches use the old index until the new one
takes over.`,
		run: maintenance("reindex", func(ctx context.Context, g *globals, svc *service.Service) error {
			start := time.Now()
			rs, err := svc.Reindex(ctx, func(stage string, through, last uint64) {
				if stage == "sketches" {
					fmt.Fprintf(g.stderr, "\r\033[Kreindex: sketches of %d of %d entries", through, last)
					return
				}
				if through >= index.Target(last) {
					// Reindex ends by compacting the new index.
					fmt.Fprintf(g.stderr, "\r\033[Kreindex: %d of %d entries; compacting the index", through, last)
					return
				}
				fmt.Fprintf(g.stderr, "\r\033[Kreindex: %d of %d entries", through, last)
			})
			fmt.Fprintln(g.stderr)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "reindexed %d entries (%d sketches rewritten) in %.1fs\n", svc.Store.LastSeq(), rs.Rewritten, time.Since(start).Seconds())
			return nil
		}, func(ctx context.Context, g *globals, c *client.Client) error {
			fmt.Fprintf(g.stderr, "reindex: the running server (%s) rebuilds its index and swaps it in; searches go on meanwhile…\n", c.BaseURL())
			res, err := c.Reindex(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "reindexed %d entries (%d sketches rewritten) in %.1fs\n", res.Entries, res.Resketched, res.Seconds)
			return nil
		}),
	})
}

// maintenance makes the run function of a maintenance command that takes
// no arguments, with a context that ends on Ctrl-C: local runs it on the
// data directory opened here, remote asks the running server that owns it.
func maintenance(name string, local func(ctx context.Context, g *globals, svc *service.Service) error,
	remote func(ctx context.Context, g *globals, c *client.Client) error) func(*globals, []string) error {
	return func(g *globals, args []string) error {
		if len(args) > 0 {
			return usagef("%s takes no arguments", name)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		svc, err := g.openService()
		if err != nil {
			c, rerr := g.remoteClient(err)
			if rerr != nil {
				return rerr
			}
			return remote(ctx, g, c)
		}
		defer svc.Close()
		return local(ctx, g, svc)
	}
}
