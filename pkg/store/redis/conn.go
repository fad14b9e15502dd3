// From a Redis URL to a go-redis client: single node, Sentinel or Cluster,
// with or without TLS, timeouts defaulted, errors without the URL.

package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ErrURL reports a Redis URL New cannot use.
var ErrURL = errors.New("invalid redis URL")

// clusterPrefix wraps a prefix without a hash tag: "mcpmon:" → "{mcpmon}:".
func clusterPrefix(p string) string {
	return "{" + strings.TrimSuffix(p, ":") + "}:"
}

func hasHashTag(p string) bool {
	i := strings.IndexByte(p, '{')
	return i >= 0 && strings.IndexByte(p[i+1:], '}') > 0
}

// newClient builds the go-redis client for the URL's scheme.
func newClient(rawURL string, opts Options) (goredis.UniversalClient, bool, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, false, fmt.Errorf("%w: no scheme (want redis://, rediss://, redis+sentinel:// or redis+cluster://)", ErrURL)
	}
	base, mode, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, false, fmt.Errorf("%w: scheme %q (want redis, rediss, redis+sentinel, redis+cluster)", ErrURL, scheme)
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch mode {
	case "":
		if authority, _, _ := strings.Cut(rest, "/"); strings.Contains(authority, ",") {
			// redis://h1:6379,h2:6379 — comma-separated seed nodes mean Cluster.
			return newClient(base+"+cluster://"+rest, opts)
		}
		o, err := goredis.ParseURL(base + "://" + rest)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
		}
		applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
		o.DialerRetries, o.MaxRetries = 1, 2
		o.MaintNotificationsConfig = maint
		return goredis.NewClient(o), false, nil
	case "sentinel", "cluster":
		u, err := multiHostURL(base, rest)
		if err != nil {
			return nil, false, err
		}
		if mode == "sentinel" {
			o, err := goredis.ParseFailoverURL(u)
			if err != nil {
				return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
			}
			if o.MasterName == "" {
				return nil, false, fmt.Errorf("%w: redis+sentinel needs ?master_name=", ErrURL)
			}
			applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
			o.DialerRetries, o.MaxRetries = 1, 2
			return goredis.NewFailoverClient(o), false, nil
		}
		o, err := goredis.ParseClusterURL(u)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
		}
		if base == "rediss" && o.TLSConfig != nil {
			o.TLSConfig.MinVersion = tls.VersionTLS12
		}
		applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
		o.DialerRetries, o.MaxRetries = 1, 2
		o.MaintNotificationsConfig = maint
		return goredis.NewClusterClient(o), true, nil
	}
	return nil, false, fmt.Errorf("%w: scheme %q (want redis, rediss, redis+sentinel, redis+cluster)", ErrURL, scheme)
}

// multiHostURL turns base://[userinfo@]h1,h2,h3[/path][?query] into the
// single-host form go-redis parses, with the other hosts as addr= params.
func multiHostURL(base, rest string) (string, error) {
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo := ""
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, authority = authority[:i+1], authority[i+1:]
	}
	hosts := strings.Split(authority, ",")
	if hosts[0] == "" {
		return "", fmt.Errorf("%w: no host", ErrURL)
	}
	path, query, _ := strings.Cut(tail, "?")
	var extra []string
	for _, h := range hosts[1:] {
		if h == "" {
			continue
		}
		extra = append(extra, "addr="+h)
	}
	if query != "" {
		extra = append(extra, query)
	}
	u := base + "://" + userinfo + hosts[0] + path
	if len(extra) > 0 {
		u += "?" + strings.Join(extra, "&")
	}
	return u, nil
}

// redactErr keeps go-redis's parse message but never the URL, which may
// hold a password: url.Parse errors quote the whole URL, so those are reduced
// to their cause.
func redactErr(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return err.Error()
}

func applyTimeouts(dial, read, write *time.Duration, opts Options) {
	if *dial == 0 {
		*dial = opts.DialTimeout
	}
	if *read == 0 {
		*read = opts.ReadTimeout
	}
	if *write == 0 {
		*write = opts.WriteTimeout
	}
}
