package testutil

import (
	"io"
	"net/http"
	"strings"
)

// Relay answers r with what the server at base (http://host:port) answers
// to the same GET, sent with base's own Host, as a program on another port
// that borrows a real server's health proof would.
func Relay(w http.ResponseWriter, r *http.Request, base string) {
	req, err := http.NewRequest("GET", base+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Host = strings.TrimPrefix(base, "http://") // what the real server's Host check wants
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
