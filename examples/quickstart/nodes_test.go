package main

import (
	"strings"
	"testing"
)

func TestNodeOptions(t *testing.T) {
	for _, tc := range []struct {
		env      string
		want     []string // the address of each node
		wantTLS  []bool
		wantUser string
	}{
		{env: "redis://127.0.0.1:6381,redis://127.0.0.1:6382", want: []string{"127.0.0.1:6381", "127.0.0.1:6382"}, wantTLS: []bool{false, false}},
		{env: "rediss://alice:secret@r1:6380/2", want: []string{"r1:6380"}, wantTLS: []bool{true}, wantUser: "alice"},
		{env: " 127.0.0.1:6381 , localhost:6382,", want: []string{"127.0.0.1:6381", "localhost:6382"}, wantTLS: []bool{false, false}},
	} {
		opts, err := nodeOptions(tc.env)
		if err != nil {
			t.Errorf("nodeOptions(%q): %v", tc.env, err)
			continue
		}
		if len(opts) != len(tc.want) {
			t.Errorf("nodeOptions(%q) gave %d nodes; want %d", tc.env, len(opts), len(tc.want))
			continue
		}
		for i, o := range opts {
			if o.Addr != tc.want[i] || (o.TLSConfig != nil) != tc.wantTLS[i] {
				t.Errorf("nodeOptions(%q)[%d] = %s (TLS %v); want %s (TLS %v)", tc.env, i, o.Addr, o.TLSConfig != nil, tc.want[i], tc.wantTLS[i])
			}
			if tc.wantUser != "" && o.Username != tc.wantUser {
				t.Errorf("nodeOptions(%q)[%d] user %q; want %q", tc.env, i, o.Username, tc.wantUser)
			}
		}
	}
}

func TestNodeOptionsRejects(t *testing.T) {
	for _, env := range []string{",", "http://r1:6379", "redis://r1:6379/x"} {
		if _, err := nodeOptions(env); err == nil || !strings.HasPrefix(err.Error(), "quickstart: ") {
			t.Errorf("nodeOptions(%q) error %v; want a quickstart error", env, err)
		}
	}
}

func TestNodeOptionsErrorHidesPassword(t *testing.T) {
	_, err := nodeOptions("redis://alice:secret@r1:x/1")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("nodeOptions error %v; want one without the password", err)
	}
}
