package integration_test

// The admin dashboard in a real headless Chromium (Debian's chromium
// package, driven with github.com/chromedp/chromedp) against the real
// binary with real traffic behind it: the key form, refused keys, every
// page of webui/src/router.ts through its nav link, no console error and
// no CSP violation anywhere, the key kept in sessionStorage only, and the
// error banner when Redis goes away.
//
// The browser is /usr/bin/chromium, or LLMGW_CHROMIUM_BIN. Without it the
// tests skip, unless LLMGW_REQUIRE_CHROMIUM=1 (.ci/run), which makes a
// missing browser a failure. With LLMGW_SCREENSHOTS=dir every page is
// saved there as <page>.png.
//
// # The helper API (reuse it to assert the pages' figures)
//
//	b := dashBrowser(t)                 // one headless Chromium for the test (fresh profile dir)
//	d := b.open(t, gw.URL+"/admin")      // a tab in a NEW browser context (empty storage), loaded
//	d2 := d.newTab(t, url)              // another tab in d's browser context (shares cookies/localStorage, not sessionStorage)
//	d.login(key)                        // type key into [data-test=key-input] and submit
//	d.loginOK(key)                      // login, then the nav and [data-test=page-home] are visible
//	d.loginRefused(key)                 // login, then an /admin/api/ 401/403 and [data-test=key-error]
//	d.waitVisible(sel)                  // wait (15 s) until the CSS selector is visible
//	d.text(sel) string                  // the visible text of the first match (waits for it)
//	d.texts(sel) []string               // the text of every match, now (no wait)
//	d.has(sel) bool                     // whether an element matches, now
//	d.click(sel)                        // click the first match
//	d.goTo(name)                        // click [data-test=nav-<name>], wait for [data-test=page-<name>]
//	d.reload()                          // reload the tab, wait for the document
//	dashEval[T](d, js) T                // evaluate a JavaScript expression (awaits a promise)
//	d.problems(allow...) []string       // console errors, exceptions and CSP violations since the last call,
//	                                    // less those containing an allowed substring; clears them
//	d.noProblems(allow...)              // fail the test on any
//	d.screenshot(name)                  // save a PNG when LLMGW_SCREENSHOTS is set
//	dashPages(t) []dashPage             // the pages of webui/src/router.ts: name, title, path
//
// Selectors are CSS: `[data-test="page-spend"] [data-test="total"]`. A
// failing helper fails the test with the page's HTML logged. Every tab
// records its console (runtime console calls, uncaught exceptions, the
// browser log: failed loads, CSP reports) and, through a script installed
// before any page script, every securitypolicyviolation event as a
// console error "CSP violation: ...".

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

const (
	dashRequireEnv  = "LLMGW_REQUIRE_CHROMIUM"
	dashWait        = 15 * time.Second
	dashStorageKey  = "llmgw-admin-key" // webui/src/stores/auth.ts
	dashAdminKey    = "sk-dash-admin-ada"
	dashBobKey      = "sk-dash-user-bob"
	dashCarolKey    = "sk-dash-user-carol"
	dashModel       = "gpt-4o-mini"
	dashCSPProblem  = "CSP violation:"
	dashExpectedCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)

// dashChromium is the browser's path; it skips t without one (fails it
// under LLMGW_REQUIRE_CHROMIUM=1).
func dashChromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("LLMGW_CHROMIUM_BIN")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv(dashRequireEnv) == "1" {
			t.Fatalf("%s=1 but no Chromium at %s: %v (apt-get install chromium)", dashRequireEnv, path, err)
		}
		t.Skipf("no Chromium at %s (%v): skipping (apt-get install chromium, or set %s=1 to fail instead)", path, err, dashRequireEnv)
	}
	return path
}

// dashBrowserT is one running headless Chromium.
type dashBrowserT struct {
	ctx context.Context
}

// dashBrowser starts Chromium headless with a fresh profile dir (no
// sandbox when running as root) for the rest of the test.
func dashBrowser(t *testing.T) *dashBrowserT {
	t.Helper()
	bin := dashChromium(t)
	profile := t.TempDir() // removed after the browser stops (cleanups run last-in first-out)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "starting %s", bin)
	return &dashBrowserT{ctx: ctx}
}

// dashTab is one browser tab on the dashboard.
type dashTab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage // not yet judged by problems
	statuses []dashResponse            // every /admin/api/ response
	syncSeen map[string]bool
}

// dashResponse is one /admin/api/ response the tab received.
type dashResponse struct {
	path   string
	status int64
}

// dashCSPProbe reports every CSP violation as a console error; it runs
// in every document before the page's own scripts (DevTools-injected, so
// the CSP does not apply to it).
const dashCSPProbe = `document.addEventListener('securitypolicyviolation', (e) => {
  console.error('` + dashCSPProblem + ` ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber)
})`

// open is a new tab in a new browser context (no cookies, no storage),
// loaded from url.
func (b *dashBrowserT) open(t *testing.T, url string) *dashTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return dashStartTab(t, ctx, url)
}

// newTab is another tab in d's browser context, loaded from url.
func (d *dashTab) newTab(t *testing.T, url string) *dashTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(d.ctx)
	t.Cleanup(cancel)
	return dashStartTab(t, ctx, url)
}

func dashStartTab(t *testing.T, ctx context.Context, url string) *dashTab {
	t.Helper()
	d := &dashTab{t: t, ctx: ctx, syncSeen: map[string]bool{}}
	require.NoError(t, chromedp.Do(ctx), "opening a tab")
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: dashCSPProbe})
	require.NoError(t, err)
	messages := chromedp.Console(ctx)
	responses := chromedp.Events(ctx, network.ResponseReceived)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			d.mu.Lock()
			if strings.HasPrefix(m.Text, "dash-sync-") {
				d.syncSeen[m.Text] = true
			} else {
				d.messages = append(d.messages, m)
			}
			d.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			if i := strings.Index(ev.Response.URL, "/admin/api/"); i >= 0 {
				d.mu.Lock()
				d.statuses = append(d.statuses, dashResponse{path: ev.Response.URL[i:], status: ev.Response.Status})
				d.mu.Unlock()
			}
		}
	}()
	resp, err := d.run(chromedp.NavigateResponse(url))
	require.NoError(t, err, "navigating to %s", url)
	if strings.HasSuffix(url, "/admin") {
		require.EqualValues(t, 200, resp.Status, url)
		assert.Equal(t, dashExpectedCSP, dashHeader(resp.Headers, "Content-Security-Policy"), "the page's CSP")
		assert.Equal(t, "nosniff", dashHeader(resp.Headers, "X-Content-Type-Options"))
	}
	return d
}

// dashHeader is a response header, any case.
func dashHeader(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// run runs one action with the helpers' timeout.
func (d *dashTab) run(a chromedp.Action[*network.Response]) (*network.Response, error) {
	ctx, cancel := context.WithTimeout(d.ctx, dashWait)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// do runs actions with the helpers' timeout, failing the test on an
// error (what, the HTML of the page logged).
func (d *dashTab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, dashWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		d.fatal("%s: %v", what, err)
	}
}

// fatal fails the test with the page's HTML and console logged.
func (d *dashTab) fatal(format string, args ...interface{}) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	if html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body"))); err == nil {
		d.t.Logf("page HTML:\n%s", html)
	}
	d.mu.Lock()
	for _, m := range d.messages {
		d.t.Logf("console %s", m)
	}
	d.mu.Unlock()
	d.t.Fatalf(format, args...)
}

func (d *dashTab) waitVisible(sel string) {
	d.t.Helper()
	d.do("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

func (d *dashTab) click(sel string) {
	d.t.Helper()
	d.do("clicking "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func (d *dashTab) text(sel string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, dashWait)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		d.fatal("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (d *dashTab) texts(sel string) []string {
	d.t.Helper()
	return dashEval[[]string](d, `Array.from(document.querySelectorAll(`+dashJS(sel)+`), (e) => e.innerText.trim())`)
}

func (d *dashTab) has(sel string) bool {
	d.t.Helper()
	return dashEval[bool](d, `document.querySelector(`+dashJS(sel)+`) !== null`)
}

// dashJS is s as a JavaScript string literal.
func dashJS(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

// dashEval evaluates the JavaScript expression js in d's page (awaiting
// a promise) and decodes the result.
func dashEval[T any](d *dashTab, js string) T {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, dashWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		d.fatal("evaluating %s: %v", js, err)
	}
	return v
}

// login types key into the key form and submits it.
func (d *dashTab) login(key string) {
	d.t.Helper()
	d.waitVisible(`[data-test="key-form"]`)
	d.do("entering the key",
		chromedp.SendKeys(chromedp.CSS(`[data-test="key-input"]`), key),
		chromedp.Click(chromedp.CSS(`[data-test="key-submit"]`), chromedp.NodeVisible))
}

// loginOK logs in with an admin key: the nav and Home show.
func (d *dashTab) loginOK(key string) {
	d.t.Helper()
	d.login(key)
	d.waitVisible(`[data-test="nav-home"]`)
	d.waitVisible(`[data-test="page-home"]`)
	d.waitForAPI(200)
	if d.has(`[data-test="key-form"]`) {
		d.fatal("the key form is still shown after an admin key")
	}
}

// loginRefused logs in with a key the gateway refuses: the admin API
// answers 401 or 403 and the form shows again with the error.
func (d *dashTab) loginRefused(key string) {
	d.t.Helper()
	d.mu.Lock()
	mark := len(d.statuses)
	d.mu.Unlock()
	d.login(key)
	d.waitFor("an /admin/api/ 401 or 403", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, r := range d.statuses[mark:] {
			if r.status == 401 || r.status == 403 {
				return true
			}
		}
		return false
	})
	d.waitVisible(`[data-test="key-error"]`)
	d.waitVisible(`[data-test="key-form"]`)
	if d.has(`[data-test="nav-home"]`) {
		d.fatal("the nav is shown after a refused key")
	}
	if got := dashEval[string](d, `sessionStorage.getItem('`+dashStorageKey+`') ?? ''`); got != "" {
		d.fatal("a refused key stays in sessionStorage: %q", got)
	}
}

// waitForAPI waits for an /admin/api/ response with status.
func (d *dashTab) waitForAPI(status int64) {
	d.t.Helper()
	d.waitFor(fmt.Sprintf("an /admin/api/ %d", status), func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, r := range d.statuses {
			if r.status == status {
				return true
			}
		}
		return false
	})
}

// waitFor polls cond until it holds (dashWait).
func (d *dashTab) waitFor(what string, cond func() bool) {
	d.t.Helper()
	for deadline := time.Now().Add(dashWait); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.fatal("timed out waiting for %s", what)
		}
	}
}

// goTo opens the page name through its nav link.
func (d *dashTab) goTo(name string) {
	d.t.Helper()
	d.click(`[data-test="nav-` + name + `"]`)
	d.waitVisible(`[data-test="page-` + name + `"]`)
}

func (d *dashTab) reload() {
	d.t.Helper()
	d.do("reloading", chromedp.Reload())
}

var dashSyncN struct {
	sync.Mutex
	n int
}

// settle waits until the console has delivered everything the page
// wrote so far (a marker message round trip), plus a moment for the
// browser log.
func (d *dashTab) settle() {
	d.t.Helper()
	dashSyncN.Lock()
	dashSyncN.n++
	marker := fmt.Sprintf("dash-sync-%d", dashSyncN.n)
	dashSyncN.Unlock()
	dashEval[chromedp.Void](d, `console.debug('`+marker+`')`)
	d.waitFor("the console marker", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.syncSeen[marker]
	})
	time.Sleep(200 * time.Millisecond)
}

// problems are the console errors, uncaught exceptions and CSP
// violations since the last call, less those containing one of allow.
func (d *dashTab) problems(allow ...string) []string {
	d.t.Helper()
	d.settle()
	d.mu.Lock()
	msgs := d.messages
	d.messages = nil
	d.mu.Unlock()
	var out []string
	for _, m := range msgs {
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException && !strings.Contains(m.Text, dashCSPProblem) {
			if m.Type == chromedp.ConsoleWarning {
				d.t.Logf("console warning (not a failure): %s (%s:%d)", m.Text, m.URL, m.Line+1)
			}
			continue
		}
		allowed := false
		for _, a := range allow {
			allowed = allowed || strings.Contains(m.Text, a)
		}
		if !allowed {
			out = append(out, fmt.Sprintf("%s [%s] (%s:%d)", m, m.Source, m.URL, m.Line+1))
		}
	}
	return out
}

func (d *dashTab) noProblems(what string, allow ...string) {
	d.t.Helper()
	if p := d.problems(allow...); len(p) > 0 {
		d.fatal("%s: console errors or CSP violations:\n  %s", what, strings.Join(p, "\n  "))
	}
}

// screenshot saves the tab as LLMGW_SCREENSHOTS/name.png (when set).
func (d *dashTab) screenshot(name string) {
	d.t.Helper()
	dir := os.Getenv("LLMGW_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(d.ctx, dashWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(d.t, err)
	require.NoError(d.t, os.MkdirAll(dir, 0o755))
	require.NoError(d.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// dashPage is one page of webui/src/router.ts.
type dashPage struct{ path, name, title string }

// dashPages reads the pages from webui/src/router.ts, in nav order.
func dashPages(t *testing.T) []dashPage {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "webui", "src", "router.ts"))
	require.NoError(t, err)
	var out []dashPage
	for _, m := range regexp.MustCompile(`\{\s*path:\s*'([^']*)',\s*name:\s*'([^']+)',\s*title:\s*'([^']+)'`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, dashPage{path: m[1], name: m[2], title: m[3]})
	}
	require.GreaterOrEqual(t, len(out), 8, "pages in router.ts")
	require.Equal(t, "home", out[0].name)
	return out
}

// dashGateway runs the binary with the admin dashboard on, stats on, a
// mock upstream, Redis at redisAddr, and ada (admin), bob and carol (one
// request a minute).
func dashGateway(t *testing.T, redisAddr string) string {
	t.Helper()
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{dashModel}, Chunks: 3})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	oneRPM := map[string]interface{}{"requestsPerMinute": 1}
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": "sk-up-dash", "models": []string{dashModel}}},
		"pricing":   map[string]interface{}{dashModel: map[string]interface{}{"inputPerM": rlInputPerM, "outputPerM": rlOutputPerM}},
		"groups":    map[string]interface{}{"team": map[string]interface{}{}, "guests": map[string]interface{}{}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "ada", "group": "team", "apiKey": dashAdminKey, "admin": true},
			{"name": "bob", "group": "team", "apiKey": dashBobKey, "limits": oneRPM},
			{"name": "carol", "group": "guests", "apiKey": dashCarolKey, "limits": oneRPM},
		}},
		"redis": map[string]interface{}{"address": redisAddr},
		"admin": map[string]interface{}{"enabled": true, "stats": map[string]interface{}{"latency": true, "userModel": true}},
	}
	return adStart(t, bin, "gw-dash", cfg).URL
}

// dashTraffic sends known traffic: ada two chats, bob two (the second
// refused by his one-a-minute limit), carol one.
func dashTraffic(t *testing.T, base string) {
	t.Helper()
	rlAwaitHeadroom(t, time.Minute, 20*time.Second)
	for _, c := range []struct {
		key    string
		status int
	}{{dashAdminKey, 200}, {dashAdminKey, 200}, {dashBobKey, 200}, {dashBobKey, 429}, {dashCarolKey, 200}} {
		require.Equal(t, c.status, adChat(t, base, c.key))
	}
}

func TestDashboardInChromium(t *testing.T) {
	b := dashBrowser(t)
	rs := redisproc.Start(t)
	base := dashGateway(t, rs.Addr)
	dashTraffic(t, base)
	pages := dashPages(t)

	// No key yet: the key form, nothing else.
	d := b.open(t, base+"/admin")
	d.waitVisible(`[data-test="key-form"]`)
	require.False(t, d.has(`[data-test="nav-home"]`), "the nav before a key")
	d.noProblems("the key form")

	// A wrong key (401) and a valid key that is not an admin's (403):
	// the form again, with the error; the browser logs the refused
	// fetches, nothing else.
	d.loginRefused("sk-not-a-key")
	d.loginRefused(dashBobKey)
	d.noProblems("refused keys", "status of 401", "status of 403")

	// The admin key: the nav and Home; then every page through its nav
	// link.
	d.loginOK(dashAdminKey)
	d.screenshot("home")
	for _, p := range pages {
		require.True(t, d.has(`[data-test="nav-`+p.name+`"]`), "nav link of %s", p.name)
		assert.Equal(t, p.title, d.text(`[data-test="nav-`+p.name+`"]`))
	}
	for _, p := range pages[1:] {
		d.goTo(p.name)
		assert.Equal(t, "#"+p.path, dashEval[string](d, `location.hash`), "the URL of %s", p.name)
		d.screenshot(p.name)
		d.noProblems("page " + p.name)
	}
	d.goTo("home")
	d.noProblems("back home")

	// The figures of the known traffic on every page (five requests
	// counted — a refused one counts — four answered, one refusal).
	dashFigures(t, d)
	d.noProblems("the figures")

	// The key: in this tab's sessionStorage only.
	assert.Equal(t, dashAdminKey, dashEval[string](d, `sessionStorage.getItem('`+dashStorageKey+`') ?? ''`))
	assert.Empty(t, dashEval[[]string](d, `Object.keys(localStorage).filter((k) => k.includes('`+dashAdminKey+`') || (localStorage.getItem(k) ?? '').includes('`+dashAdminKey+`'))`), "localStorage")
	assert.Equal(t, "", dashEval[string](d, `document.cookie`))
	cookies, err := chromedp.Call(d.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/admin", base + "/admin/api/overview"}})
	require.NoError(t, err)
	assert.Empty(t, cookies.Cookies, "cookies (HttpOnly too)")
	assert.NotContains(t, dashEval[string](d, `location.href`), dashAdminKey)

	// A reload keeps the session (and the page).
	last := pages[len(pages)-1]
	d.goTo(last.name)
	d.reload()
	d.waitVisible(`[data-test="page-` + last.name + `"]`)
	d.waitVisible(`[data-test="nav-home"]`)
	require.False(t, d.has(`[data-test="key-form"]`), "the key form after a reload")
	d.noProblems("after a reload")

	// Another tab of the same browser context (sessionStorage is per
	// tab) and a new browser context: the key form.
	sibling := d.newTab(t, base+"/admin")
	sibling.waitVisible(`[data-test="key-form"]`)
	require.False(t, sibling.has(`[data-test="nav-home"]`))
	sibling.noProblems("a second tab")
	fresh := b.open(t, base+"/admin")
	fresh.waitVisible(`[data-test="key-form"]`)
	require.False(t, fresh.has(`[data-test="nav-home"]`))
	fresh.noProblems("a new browser context")

	// Redis stopped: the next poll answers 503 and the banner shows
	// (never zeros); the browser logs the refused fetches only.
	require.NoError(t, rs.Stop())
	d.goTo("home")
	d.waitVisible(`[data-test="error-banner"]`)
	assert.Contains(t, d.text(`[data-test="error-banner"]`), "unavailable")
	d.screenshot("store-down")
	d.noProblems("Redis down", "status of 503")

	// The harness sees what it must fail on: an inline script (refused by
	// the CSP) and an uncaught exception are both reported.
	dashEval[chromedp.Void](d, `(() => { const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; document.head.appendChild(s); setTimeout(() => { throw new Error('dash-probe') }) })()`)
	time.Sleep(300 * time.Millisecond)
	got := strings.Join(d.problems("status of 503"), "\n")
	assert.Contains(t, got, dashCSPProblem+" script-src", "the CSP probe")
	assert.Contains(t, got, "dash-probe", "the exception probe")
	assert.False(t, dashEval[bool](d, `window.inlineRan === true`), "an inline script ran despite the CSP")
}

// waitText waits until the text of the first match of sel contains want.
func (d *dashTab) waitText(sel, want string) {
	d.t.Helper()
	d.waitVisible(sel)
	d.waitFor(sel+" to contain "+want, func() bool {
		texts := d.texts(sel)
		return len(texts) > 0 && strings.Contains(texts[0], want)
	})
}

// waitTexts waits until some match of sel contains want.
func (d *dashTab) waitTexts(sel, want string) {
	d.t.Helper()
	d.waitFor("a "+sel+" containing "+want, func() bool {
		for _, x := range d.texts(sel) {
			if strings.Contains(x, want) {
				return true
			}
		}
		return false
	})
}

// dashFigures checks each page shows dashTraffic's figures.
func dashFigures(t *testing.T, d *dashTab) {
	t.Helper()
	d.goTo("home")
	d.waitText(`[data-test="home-requests-today"]`, "5")
	d.waitTexts(`[data-test="home-top-user"]`, "ada")
	d.waitTexts(`[data-test="home-provider"]`, "mock")
	d.goTo("spend")
	d.waitTexts(`[data-test="spend-group"]`, "team")
	d.waitTexts(`[data-test="spend-group"]`, "guests")
	d.waitText(`[data-test="spend-card"][data-metric="cost"] [data-test="spend-total"]`, "$")
	d.goTo("consumers")
	d.waitTexts(`[data-test="consumer-user"]`, "carol")
	assert.Len(t, d.texts(`[data-test="consumer-user"]`), 3, "consumer rows")
	d.goTo("models")
	d.waitText(`[data-test="model-row"][data-id="mock/`+dashModel+`"] [data-test="model-requests"]`, "4")
	d.goTo("reliability")
	d.waitText(`[data-test="reliability-row"][data-id="mock"] [data-test="reliability-attempts"]`, "4")
	d.goTo("events")
	d.waitTexts(`[data-test="events-row"]`, "bob")
	d.goTo("targets")
	d.waitVisible(`[data-test="targets-mcp-empty"]`)
	d.goTo("config")
	d.waitText(`[data-test="config-yaml"]`, "[redacted]")
	assert.NotContains(t, d.text(`[data-test="config-yaml"]`), "sk-up-dash", "the provider key in the config page")
	d.goTo("home")
}
