package client

import (
	"context"
	"errors"
	"net/http"

	pihistory "github.com/pi-history/pi-history"
)

// History is c as a pihistory.History: the answers a search.Engine gives
// in the server's process, and its errors. A refused request (a problem
// document with status 400 or 404) comes back as the *pihistory.Error the
// engine returned there, with its kind, parameter and message, so a caller
// (the CLI, say) handles and prints both alike; any other failure is
// returned as it is (a *Error, or the transport's error).
func (c *Client) History() pihistory.History { return history{c} }

type history struct{ c *Client }

func (h history) Search(ctx context.Context, req *pihistory.SearchRequest) (*pihistory.SearchResponse, error) {
	resp, err := h.c.Search(ctx, req)
	return resp, Refusal(err)
}

func (h history) List(ctx context.Context, req *pihistory.ListRequest) (*pihistory.ListResponse, error) {
	resp, err := h.c.List(ctx, req)
	return resp, Refusal(err)
}

func (h history) Read(ctx context.Context, req *pihistory.ReadRequest) (*pihistory.ReadResponse, error) {
	resp, err := h.c.Read(ctx, req)
	return resp, Refusal(err)
}

func (h history) Windows(ctx context.Context, session, leaf string) (string, []pihistory.Window, error) {
	resp, err := h.c.Windows(ctx, session, leaf)
	if err != nil {
		return "", nil, Refusal(err)
	}
	return resp.Leaf, resp.Windows, nil
}

func (h history) Sessions(ctx context.Context) ([]pihistory.SessionSummary, error) {
	ss, err := h.c.Sessions(ctx)
	return ss, Refusal(err)
}

func (h history) Session(ctx context.Context, id string) (*pihistory.SessionSummary, error) {
	d, err := h.c.Session(ctx, id, SessionOptions{NoTree: true})
	if err != nil {
		return nil, Refusal(err)
	}
	return &d.Summary, nil
}

// BranchPath lists the branch a page at a time: the list of a branch is
// its path, and its items name their entries and seqs.
func (h history) BranchPath(ctx context.Context, session, leaf string) (string, []pihistory.EntryRef, error) {
	req := &pihistory.ListRequest{Session: session, Leaf: leaf, Limit: branchPage}
	var refs []pihistory.EntryRef
	for {
		resp, err := h.c.List(ctx, req)
		if err != nil {
			return "", nil, Refusal(err)
		}
		for _, it := range resp.Items {
			refs = append(refs, pihistory.EntryRef{Session: session, Entry: it.Entry, Seq: it.Seq})
		}
		// Later pages stay on the first page's leaf, whatever the
		// current leaf does meanwhile.
		req.Leaf = resp.Leaf
		if req.Cursor = resp.Cursor; req.Cursor == "" {
			return resp.Leaf, refs, nil
		}
	}
}

// branchPage is the largest page a list may ask for.
const branchPage = 1000

// refused turns a problem document that refuses the request (400, 404)
// back into the *pihistory.Error the server's engine returned.
func Refusal(err error) error {
	var pe *Error
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Status {
	case http.StatusBadRequest:
		return &pihistory.Error{Kind: pihistory.Invalid, Param: pe.Param, Msg: pe.Detail}
	case http.StatusNotFound:
		return &pihistory.Error{Kind: pihistory.NotFound, Param: pe.Param, Msg: pe.Detail}
	}
	return err
}
