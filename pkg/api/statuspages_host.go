package api

import (
	"net"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// ownHostNames are the host names of hosts (--api-hosts values, with or
// without a port) in the form a page's host is compared in.
func ownHostNames(hosts []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		if h = normalizeHost(h); h != "" {
			out[h] = true
		}
	}
	return out
}

// ownHostTaken refuses a page's host that is one of the API's own names: a
// tenant's page would be served at / of the deployment's own domain, with
// text the tenant chose (a sign-in page, say).
func (s *server) ownHostTaken(p model.StatusPage) []apiv1.FieldError {
	if p.Host == "" || !s.ownHosts[normalizeHost(p.Host)] {
		return nil
	}
	return []apiv1.FieldError{{Pointer: "#/host", Detail: "is this mcpmon's own host name (--api-hosts): a status page needs a host name of its own"}}
}
