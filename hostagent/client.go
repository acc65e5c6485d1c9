package hostagent

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to a hostagent's API.
type Client struct {
	hc   *http.Client
	base string
	// maxAnswer bounds a JSON answer (0: maxAnswerBytes).
	maxAnswer int64
}

// maxAnswerBytes bounds a JSON answer of the agent's. The largest it gives
// is an ib_write_lat job's status with every sample (-U): at most
// maxUnsortedIterations of them, each a float64 of at most 24 characters
// and a comma, 250 MB, beside a few KB of request and rows; 1 MiB more
// covers those. A longer body is not an answer of the API's, and decoding
// it would hold whatever the far end sends.
const maxAnswerBytes = 1<<20 + 25*maxUnsortedIterations

// NewClient returns a client of the agent at baseURL (e.g.
// "http://127.0.0.1:41234") through hc (nil: a client that ignores proxy
// settings). Requests carry no timeout of their own: give them a context with
// a deadline.
func NewClient(hc *http.Client, baseURL string) *Client {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
	}
	return &Client{hc: hc, base: strings.TrimRight(baseURL, "/")}
}

// NewDialClient returns a client whose every connection comes from dial:
// the host driver passes a function that opens a channel forwarded over its
// SSH connection to the agent's loopback address.
func NewDialClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Client {
	tr := &http.Transport{Proxy: nil, DialContext: dial, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
	return NewClient(&http.Client{Transport: tr}, "http://hostagent")
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when not nil). Non-2xx answers become *APIError.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	limit := c.maxAnswer
	if limit <= 0 {
		limit = maxAnswerBytes
	}
	lr := &io.LimitedReader{R: resp.Body, N: limit + 1}
	if err := json.NewDecoder(lr).Decode(out); err != nil {
		if lr.N <= 0 {
			return fmt.Errorf("hostagent %s: %s %s: answer longer than %d bytes, more than the API's largest (every sample of the longest ib_write_lat job)", c.base, method, path, limit)
		}
		return fmt.Errorf("hostagent: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// send returns a 2xx response whose body the caller closes.
func (c *Client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hostagent: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb errorBody
	if json.Unmarshal(raw, &eb) != nil || eb.Error.Kind == "" {
		return nil, &APIError{Status: resp.StatusCode, Kind: KindInternal,
			Message: fmt.Sprintf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))}
	}
	return nil, &APIError{Status: resp.StatusCode, Kind: eb.Error.Kind, Message: eb.Error.Message}
}

// Version asks the agent who it is and what it can do.
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	return v, c.do(ctx, http.MethodGet, "/v1/version", nil, &v)
}

// Counters takes a snapshot of the host's counters, of the named interfaces
// only when ifaces are given.
func (c *Client) Counters(ctx context.Context, ifaces ...string) (Counters, error) {
	q := url.Values{"iface": ifaces}
	path := "/v1/counters"
	if len(ifaces) > 0 {
		path += "?" + q.Encode()
	}
	var out Counters
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// StartFCTServer starts an FCT server on the host.
func (c *Client) StartFCTServer(ctx context.Context, req FCTServerRequest) (FCTServerInfo, error) {
	var out FCTServerInfo
	return out, c.do(ctx, http.MethodPost, "/v1/fct/server", req, &out)
}

// FCTServers lists the host's FCT servers.
func (c *Client) FCTServers(ctx context.Context) ([]FCTServerInfo, error) {
	var out struct {
		Servers []FCTServerInfo `json:"servers"`
	}
	return out.Servers, c.do(ctx, http.MethodGet, "/v1/fct/server", nil, &out)
}

// StopFCTServer stops an FCT server.
func (c *Client) StopFCTServer(ctx context.Context, id string) (FCTServerInfo, error) {
	var out FCTServerInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/fct/server/"+url.PathEscape(id), nil, &out)
}

// StartFCTRun starts an FCT client run and returns at once.
func (c *Client) StartFCTRun(ctx context.Context, req FCTRunRequest) (FCTRunStatus, error) {
	var out FCTRunStatus
	return out, c.do(ctx, http.MethodPost, "/v1/fct/run", req, &out)
}

// FCTRun returns a run's status, waiting up to wait (at most a minute) for
// it to finish.
func (c *Client) FCTRun(ctx context.Context, id string, wait time.Duration) (FCTRunStatus, error) {
	var out FCTRunStatus
	return out, c.do(ctx, http.MethodGet, "/v1/fct/run/"+url.PathEscape(id)+waitQuery(wait), nil, &out)
}

// WaitFCTRun polls a run until it is no longer running or ctx ends.
func (c *Client) WaitFCTRun(ctx context.Context, id string) (FCTRunStatus, error) {
	for {
		st, err := c.FCTRun(ctx, id, 30*time.Second)
		if err != nil || st.State != StateRunning {
			return st, err
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
}

// RunFCT starts a run and waits for it. A run that did not end done is an
// error (the status is still returned). When ctx ends first, the run is
// canceled on the agent.
func (c *Client) RunFCT(ctx context.Context, req FCTRunRequest) (FCTRunStatus, error) {
	st, err := c.StartFCTRun(ctx, req)
	if err != nil {
		return st, err
	}
	id := st.ID
	st, err = c.WaitFCTRun(ctx, id)
	if ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cst, cerr := c.CancelFCTRun(cctx, id); cerr == nil {
			st = cst
		}
		return st, ctx.Err()
	}
	if err != nil {
		return st, err
	}
	return st, jobError(st.State, st.Error)
}

// CancelFCTRun cancels a run (if running) and makes the agent forget it.
func (c *Client) CancelFCTRun(ctx context.Context, id string) (FCTRunStatus, error) {
	var out FCTRunStatus
	return out, c.do(ctx, http.MethodDelete, "/v1/fct/run/"+url.PathEscape(id), nil, &out)
}

// FCTSamplesGzip copies a finished run's samples, the gzip'd CSV of API.md,
// to w as they come.
func (c *Client) FCTSamplesGzip(ctx context.Context, id string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/fct/run/"+url.PathEscape(id)+"/samples", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("hostagent: samples of %s: %w", id, err)
	}
	return nil
}

// FCTSamples downloads and parses a finished run's samples.
func (c *Client) FCTSamples(ctx context.Context, id string) ([]Sample, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/fct/run/"+url.PathEscape(id)+"/samples", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("hostagent: samples of %s: %w", id, err)
	}
	s, err := ReadSamplesCSV(zr)
	if err != nil {
		return nil, fmt.Errorf("hostagent: samples of %s: %w", id, err)
	}
	return s, nil
}

// StartWriteLat starts ib_write_lat on the host. Where the tool is missing
// the error matches errors.Is(err, ErrNotAvailable).
func (c *Client) StartWriteLat(ctx context.Context, req WriteLatRequest) (WriteLatStatus, error) {
	var out WriteLatStatus
	return out, c.do(ctx, http.MethodPost, "/v1/rdma/write_lat", req, &out)
}

// WriteLat returns a job's status, waiting up to wait for it to finish.
func (c *Client) WriteLat(ctx context.Context, id string, wait time.Duration) (WriteLatStatus, error) {
	var out WriteLatStatus
	return out, c.do(ctx, http.MethodGet, "/v1/rdma/write_lat/"+url.PathEscape(id)+waitQuery(wait), nil, &out)
}

// WaitWriteLat polls a job until it is no longer running. A job that did
// not end done is an error (the status is still returned).
func (c *Client) WaitWriteLat(ctx context.Context, id string) (WriteLatStatus, error) {
	for {
		st, err := c.WriteLat(ctx, id, 30*time.Second)
		if err != nil {
			return st, err
		}
		if st.State != StateRunning {
			return st, jobError(st.State, st.Error)
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
}

// StopWriteLat kills a job's process (if running) and makes the agent forget it.
func (c *Client) StopWriteLat(ctx context.Context, id string) (WriteLatStatus, error) {
	var out WriteLatStatus
	return out, c.do(ctx, http.MethodDelete, "/v1/rdma/write_lat/"+url.PathEscape(id), nil, &out)
}

func waitQuery(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return "?wait=" + url.QueryEscape(min(d, maxWait).String())
}

// jobError is the error of a job that ended in a state other than done.
func jobError(state string, e *ErrorInfo) error {
	switch {
	case state == StateDone:
		return nil
	case e != nil:
		return &APIError{Kind: e.Kind, Message: e.Message}
	default:
		return errors.New("hostagent: job ended " + state)
	}
}
