package tofino

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzAgentReplyLines: whatever lines the switch agent answers a request
// with (the bytes fuzzed, "$ID" replaced by the request's id, then the
// connection closed), the client, over TCP on loopback, returns an error
// or the result decoded into the caller's type, and never a result for
// another request; it does not hang (the closed stream ends a reply that
// never comes) and does not panic.
func FuzzAgentReplyLines(f *testing.F) {
	for _, s := range []string{
		`{"id":$ID,"ok":true,"result":{"value":7}}`,
		`{"id":$ID,"ok":false,"error":{"kind":"not_found","message":"no table pipe.Ingress.t"}}`,
		`{"id":$ID,"ok":false}`, `{"id":0,"ok":true}` + "\n" + `{"id":$ID,"ok":true,"result":{"value":1}}`,
		`{"id":999999,"ok":true}`, `{"id":$ID,"ok":true,"result":"seven"}`, `{"id":$ID,"ok":true,"result":{"value":1e400}}`,
		`not json`, ``, `{"id":$ID`, `{"id":-1,"ok":true}`, `{"id":$ID,"ok":true,"result":null}`,
	} {
		f.Add([]byte(s))
	}
	var reply atomic.Pointer[[]byte]
	addr := scriptedAgent(f, true, func(id int64) []byte {
		return bytes.ReplaceAll(*reply.Load(), []byte("$ID"), []byte(strconv.FormatInt(id, 10)))
	})
	a := &agentClient{
		dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
		token:   func(context.Context) (string, error) { return "t", nil },
		timeout: 5 * time.Second,
	}
	f.Cleanup(a.close)
	f.Fuzz(func(t *testing.T, body []byte) {
		reply.Store(&body)
		var out struct {
			Value int64 `json:"value"`
		}
		before := a.nextID
		err := a.call(context.Background(), "read", map[string]int{"index": 1}, &out)
		if err == nil && !bytes.Contains(body, []byte("$ID")) && !bytes.Contains(body, []byte(strconv.FormatInt(a.nextID, 10))) {
			t.Fatalf("a result from %q, which answers no request after %d", body, before)
		}
	})
}
