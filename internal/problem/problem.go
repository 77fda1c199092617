// Package problem writes the RFC 9457 problem documents of every HTTP
// route pi-history serves (the API, the web UI's data routes, export): one
// set of problem types, one mapping from a pihistory.Kind to a type, title
// and status, and one writer.
package problem

import (
	"encoding/json"
	"errors"
	"net/http"

	pihistory "github.com/pi-history/pi-history"
)

// Problem types (RFC 9457 "type" members). Each names one kind of failure;
// clients branch on the type or the status, people read title and detail.
const (
	InvalidJSON     = "urn:pi-history:problem:invalid-json"
	InvalidParam    = "urn:pi-history:problem:invalid-parameter"
	UnknownParam    = "urn:pi-history:problem:unknown-parameter"
	Unauthorized    = "urn:pi-history:problem:unauthorized"
	ForbiddenHost   = "urn:pi-history:problem:forbidden-host"
	ForbiddenOrigin = "urn:pi-history:problem:forbidden-origin"
	ForbiddenPath   = "urn:pi-history:problem:forbidden-path"
	NotFound        = "urn:pi-history:problem:not-found"
	Method          = "urn:pi-history:problem:method-not-allowed"
	Conflict        = "urn:pi-history:problem:conflict"
	TooLarge        = "urn:pi-history:problem:body-too-large"
	MediaType       = "urn:pi-history:problem:unsupported-media-type"
	TooManyRequests = "urn:pi-history:problem:too-many-requests"
	ShuttingDown    = "urn:pi-history:problem:shutting-down"
	WritesStopped   = "urn:pi-history:problem:writes-stopped"
	Unavailable     = "urn:pi-history:problem:unavailable"
	Internal        = "urn:pi-history:problem:internal"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// InternalDetail is the detail of a 500: it reveals nothing of the cause,
// which the server logs instead.
const InternalDetail = "the server failed to answer; the cause is in its log"

// Doc is a problem document: the standard members, and the ones
// pi-history adds (param, and entry on a conflict). It is the root
// package's Problem, the type api/client decodes. Routes that add members
// of their own embed it.
type Doc = pihistory.Problem

// kinds gives each kind its type, title and status.
var kinds = map[pihistory.Kind]Doc{
	pihistory.Internal:    {Type: Internal, Title: "Internal server error", Status: http.StatusInternalServerError},
	pihistory.NotFound:    {Type: NotFound, Title: "Not found", Status: http.StatusNotFound},
	pihistory.Invalid:     {Type: InvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest},
	pihistory.Conflict:    {Type: Conflict, Title: "Conflict", Status: http.StatusConflict},
	pihistory.TooLarge:    {Type: TooLarge, Title: "Over a size limit", Status: http.StatusRequestEntityTooLarge},
	pihistory.Unavailable: {Type: Unavailable, Title: "Service unavailable", Status: http.StatusServiceUnavailable},
}

// OfKind is the document of a failure of kind k, without detail. An
// unknown kind is an internal error.
func OfKind(k pihistory.Kind) Doc {
	if d, ok := kinds[k]; ok {
		return d
	}
	return kinds[pihistory.Internal]
}

// Of is the document of err when err is, or wraps, a *pihistory.Error or a
// pihistory.Kinded: its kind's type, title and status with its detail and
// parameter. Two failures the root package names have a type or title of
// their own: stopped writes (WritesStopped, with what to do) and a
// conflicting entry (naming it in Entry). ok is false for any other error
// and for kind Internal, which the caller logs and answers with
// InternalDoc.
func Of(err error) (d Doc, ok bool) {
	k := pihistory.KindOf(err)
	if k == pihistory.Internal {
		return InternalDoc(), false
	}
	d = OfKind(k)
	var e *pihistory.Error
	var ce *pihistory.ConflictError
	switch {
	case errors.As(err, &e) && e.Kind == k:
		d.Detail, d.Param = e.Detail(), e.Param
	case errors.As(err, &ce):
		d.Title, d.Detail, d.Entry = "Entry already stored with different content", ce.Error(), ce.ID
	case errors.Is(err, pihistory.ErrWritesStopped):
		d.Type, d.Title = WritesStopped, "Writes are stopped"
		d.Detail = err.Error() + "; send it again later (GET /healthz says when writes resume)"
	default:
		d.Detail = err.Error()
	}
	return d, true
}

// InternalDoc is the answer to a failure the server did not expect.
func InternalDoc() Doc {
	d := kinds[pihistory.Internal]
	d.Detail = InternalDetail
	return d
}

// Document is a problem document to send: a Doc, or a struct that
// embeds one and adds members.
type Document interface {
	HTTPStatus() int
}

// Write sends doc as the response, with the status it carries (for a
// document made by Of or OfKind, its kind's). It is the one writer of
// problem documents: the headers (no caching; a Bearer challenge with a
// 401) and the bytes (json.Marshal's and a newline) are the same on every
// route.
func Write(w http.ResponseWriter, doc Document) {
	status := doc.HTTPStatus()
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="pi-history"`)
	}
	w.WriteHeader(status)
	b, err := json.Marshal(doc)
	if err != nil {
		// Only a document with an unencodable member of its own gets here.
		b, _ = json.Marshal(InternalDoc())
	}
	w.Write(append(b, '\n'))
}
