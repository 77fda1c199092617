package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/service"
)

func init() {
	register(&command{
		name:    "reindex",
		usage:   "",
		summary: "rebuild the search index from the store",
		help: `Builds every file of the search index again from the store, one at
a time, each swapped in as soon as it is written, then takes in what
arrived meanwhile. Searches stay exact throughout. The index rebuilds by
itself what it finds of another format or damaged (a file that fails its
checksum when read is read around until then), so this is for when you
want it done now, at once. Entries themselves are never changed.
While 'pi-history serve' runs, the server does it (POST
/v1/maintenance/reindex).`,
		run: maintenance("reindex", func(ctx context.Context, g *globals, svc *service.Service) error {
			start := time.Now()
			err := svc.Reindex(ctx, func(_ string, through, last uint64) {
				fmt.Fprintf(g.stderr, "\r\033[Kreindex: %d of %d entries", through, last)
			})
			fmt.Fprintln(g.stderr)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "reindexed %d entries in %.1fs\n", svc.Store.LastSeq(), time.Since(start).Seconds())
			return nil
		}, func(ctx context.Context, g *globals, c *client.Client) error {
			fmt.Fprintf(g.stderr, "reindex: the running server (%s) rebuilds its index file by file; searches go on meanwhile…\n", c.BaseURL())
			res, err := c.Reindex(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "reindexed %d entries in %.1fs\n", res.Entries, res.Seconds)
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
