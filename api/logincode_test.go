package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/pi-history/pi-history/api/client"
)

func TestLoginCodeRoute(t *testing.T) {
	h := newHarness(t)
	var lc client.LoginCode
	h.ok(h.do(req{Method: "POST", Path: "/v1/ui/login-code"}), &lc)
	if len(lc.Code) < 32 || lc.Path != "/ui/login?code="+url.QueryEscape(lc.Code) {
		t.Fatalf("login code %+v", lc)
	}
	var again client.LoginCode
	h.ok(h.do(req{Method: "POST", Path: "/v1/ui/login-code"}), &again)
	if again.Code == lc.Code {
		t.Error("two requests got the same code")
	}

	// Only the bearer token mints codes: not the browser's cookie, not nobody.
	h.srv.Auth().SetCookieValidator(func(_ *http.Request, v string) bool { return v == "good-cookie" })
	cookie := map[string]string{"Cookie": CookieName + "=good-cookie", "Origin": "http://" + testAddr}
	h.problem(h.do(req{Method: "POST", Path: "/v1/ui/login-code", NoAuth: true, Header: cookie}), 403, "Authorization")
	h.problem(h.do(req{Method: "POST", Path: "/v1/ui/login-code", NoAuth: true}), 401, "Authorization")
	h.problem(h.do(req{Method: "POST", Path: "/v1/ui/login-code", Header: map[string]string{"Authorization": "Bearer wrong-token-wrong-token"}}), 401, "Authorization")
	// The server-wide rules hold too.
	h.problem(h.do(req{Method: "POST", Path: "/v1/ui/login-code", Header: map[string]string{"Origin": "http://evil.example"}}), 403, "Origin")
	h.problem(h.do(req{Method: "POST", Path: "/v1/ui/login-code", Header: map[string]string{"Host": "evil.example:7314"}}), 403, "Host")
	h.problem(h.do(req{Path: "/v1/ui/login-code"}), 405, "")
}
