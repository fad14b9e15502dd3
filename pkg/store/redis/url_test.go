package redis

import (
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestMultiHostURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"h1:26379", "redis://h1:26379"},
		{"h1:26379,h2:26379,h3:26379/1?master_name=m", "redis://h1:26379/1?addr=h2:26379&addr=h3:26379&master_name=m"},
		{":pw@h1:26379,h2:26379?master_name=m", "redis://:pw@h1:26379?addr=h2:26379&master_name=m"},
		{"u:p@w@h1:1,h2:2", "redis://u:p@w@h1:1?addr=h2:2"},
	} {
		got, err := multiHostURL("redis", c.in)
		if err != nil || got != c.want {
			t.Errorf("multiHostURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := multiHostURL("redis", "/0"); err == nil {
		t.Error("no host accepted")
	}
}

// TestNewClientKinds: each scheme yields the right go-redis client with the
// store's bounded timeouts unless the URL sets its own. No connection is made.
func TestNewClientKinds(t *testing.T) {
	opts := Options{DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	for _, c := range []struct {
		url     string
		cluster bool
		check   func(t *testing.T, c goredis.UniversalClient)
	}{
		{"redis://127.0.0.1:1/2", false, func(t *testing.T, c goredis.UniversalClient) {
			o := c.(*goredis.Client).Options()
			if o.Addr != "127.0.0.1:1" || o.DB != 2 || o.DialTimeout != 2*time.Second || o.TLSConfig != nil {
				t.Errorf("options %+v", o)
			}
		}},
		{"rediss://127.0.0.1:1?dial_timeout=500ms", false, func(t *testing.T, c goredis.UniversalClient) {
			o := c.(*goredis.Client).Options()
			if o.TLSConfig == nil || o.DialTimeout != 500*time.Millisecond {
				t.Errorf("TLS %v dial timeout %s", o.TLSConfig != nil, o.DialTimeout)
			}
		}},
		{"redis+sentinel://127.0.0.1:1,127.0.0.1:2/0?master_name=m", false, func(t *testing.T, c goredis.UniversalClient) {
			if _, ok := c.(*goredis.Client); !ok {
				t.Errorf("sentinel client is %T", c)
			}
		}},
		{"redis://127.0.0.1:1,127.0.0.1:2/0?dial_timeout=1s", true, func(t *testing.T, c goredis.UniversalClient) {
			o := c.(*goredis.ClusterClient).Options()
			if len(o.Addrs) != 2 || o.DialTimeout != time.Second {
				t.Errorf("comma-separated cluster: addrs %v dial timeout %s", o.Addrs, o.DialTimeout)
			}
		}},
		{"redis+cluster://127.0.0.1:1,127.0.0.1:2", true, func(t *testing.T, c goredis.UniversalClient) {
			o := c.(*goredis.ClusterClient).Options()
			if strings.Join(o.Addrs, ",") != "127.0.0.1:1,127.0.0.1:2" {
				t.Errorf("cluster addrs %v", o.Addrs)
			}
		}},
	} {
		t.Run(c.url, func(t *testing.T) {
			cl, cluster, err := newClient(c.url, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if cluster != c.cluster {
				t.Errorf("cluster = %v", cluster)
			}
			c.check(t, cl)
		})
	}
}

func TestClusterPrefix(t *testing.T) {
	for in, want := range map[string]string{"mcpmon:": "{mcpmon}:", "team-a": "{team-a}:"} {
		if got := clusterPrefix(in); got != want || !hasHashTag(got) {
			t.Errorf("clusterPrefix(%q) = %q, want %q", in, got, want)
		}
	}
	for p, want := range map[string]bool{"{mcpmon}:": true, "a{b}c:": true, "mcpmon:": false, "{}:": false, "{x:": false} {
		if hasHashTag(p) != want {
			t.Errorf("hasHashTag(%q) = %v", p, !want)
		}
	}
}
