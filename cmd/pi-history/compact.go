package main

import (
	"context"
	"fmt"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/service"
)

func init() {
	register(&command{
		name:    "compact",
		usage:   "",
		summary: "shrink the store and the index on disk",
		help: `Rewrites the store into its most compressed form and merges the index's
segments, then prints the sizes before and after. A data directory made
by an earlier version gets its long texts stored once, in the store's
text file, the first time (the longer the history, the longer that takes;
it says how long it took). An import of 100,000
entries or more does this by itself at the end; run it after many smaller
imports, or after sessions were rewritten or removed. While 'pi-history
serve' runs, the server does it (POST /v1/maintenance/compact); searches
and ingest go on meanwhile (entries stored meanwhile are searchable at once
and indexed when it ends).`,
		run: maintenance("compact", func(ctx context.Context, g *globals, svc *service.Service) error {
			if err := svc.WaitIndexed(ctx); err != nil {
				return err
			}
			before, err := svc.Stats()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "compacting the store (%s) and the index (%s)…\n", size(before.StoreBytes), size(before.IndexBytes))
			start := time.Now()
			if err := svc.Compact(ctx); err != nil {
				return err
			}
			after, err := svc.Stats()
			if err != nil {
				return err
			}
			printCompacted(g, time.Since(start).Seconds(), before.StoreBytes, after.StoreBytes, before.IndexBytes, after.IndexBytes)
			return nil
		}, func(ctx context.Context, g *globals, c *client.Client) error {
			before, err := c.Stats(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "compacting the store (%s) and the index (%s) in the running server (%s)…\n",
				size(before.StoreBytes), size(before.IndexBytes), c.BaseURL())
			res, err := c.Compact(ctx)
			if err != nil {
				return err
			}
			printCompacted(g, res.Seconds, res.StoreBefore, res.StoreAfter, res.IndexBefore, res.IndexAfter)
			return nil
		}),
	})
}

func printCompacted(g *globals, seconds float64, storeBefore, storeAfter, indexBefore, indexAfter int64) {
	fmt.Fprintf(g.stdout, "compacted in %.1fs: store %s → %s, index %s → %s\n", seconds,
		size(storeBefore), size(storeAfter), size(indexBefore), size(indexAfter))
	if grew := storeAfter + indexAfter - storeBefore - indexBefore; grew > 0 {
		// Not a result to be pleased with: say so, and when it pays.
		fmt.Fprintf(g.stderr, "note: that is %s more than before: there was nothing to reclaim, and rewriting the tables does not "+
			"shrink them; compact pays after sessions were rewritten or removed, not after a plain import\n", size(grew))
	}
}
