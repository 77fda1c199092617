package main

import (
	"fmt"

	"github.com/pi-history/pi-history/api"
)

func init() {
	register(&command{
		name:    "token",
		usage:   "",
		summary: "print the HTTP API's bearer token (creating it if needed)",
		help: `Prints the token every /v1 request to 'pi-history serve' must carry as
"Authorization: Bearer <token>". It lives in <data>/api-token (mode 0600)
and is created on first use. Anyone who can read it can use the API as you.

Example:
  curl -H "Authorization: Bearer $(pi-history token)" http://127.0.0.1:7314/v1/stats`,
		run: func(g *globals, args []string) error {
			if len(args) > 0 {
				return usagef("token takes no arguments")
			}
			dir, err := g.dataDir()
			if err != nil {
				return err
			}
			tok, created, fixed, err := api.LoadOrCreateToken(dir)
			if err != nil {
				return err
			}
			if created {
				g.log.Info("created a new API token", "file", dir+"/api-token")
			}
			if fixed {
				g.log.Warn("the API token file was readable by others; it is private now, but consider deleting it to get a new token", "file", dir+"/api-token")
			}
			fmt.Fprintln(g.stdout, tok)
			return nil
		},
	})
}
