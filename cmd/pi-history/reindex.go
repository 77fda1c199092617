package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/service"
)

func init() {
	register(&command{
		name:    "reindex",
		usage:   "",
		summary: "rebuild the search index from the store",
		help: `Builds a new index from the store in a directory beside the current one
and swaps it in when complete. Use it after an upgrade that changes the
index format, or if the index is damaged. The store is not changed.`,
		run: ownDataDir("reindex", func(ctx context.Context, g *globals, svc *service.Service) error {
			start := time.Now()
			err := svc.Index.Reindex(ctx, func(through, last uint64) {
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
			fmt.Fprintf(g.stdout, "reindexed %d entries in %.1fs\n", svc.Store.LastSeq(), time.Since(start).Seconds())
			return nil
		}),
	})
}

// ownDataDir makes the run function of a maintenance command that takes no
// arguments and opens the data directory itself (it needs it to itself, so
// a running server is an error naming its pid), with a context that ends on
// Ctrl-C.
func ownDataDir(name string, fn func(ctx context.Context, g *globals, svc *service.Service) error) func(*globals, []string) error {
	return func(g *globals, args []string) error {
		if len(args) > 0 {
			return usagef("%s takes no arguments", name)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		svc, err := g.openService()
		if err != nil {
			return err
		}
		defer svc.Close()
		return fn(ctx, g, svc)
	}
}
