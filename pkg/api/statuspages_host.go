package api

import (
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// ownHostNames are the host names of hosts (--api-hosts values, with or
// without a port) in the form status pages route by (status.HostName).
func ownHostNames(hosts []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range hosts {
		if h = status.HostName(strings.TrimSpace(h)); h != "" {
			out[h] = true
		}
	}
	return out
}

// ownHostTaken refuses a page's host that is one of the API's own names: a
// tenant's page would be served at / of the deployment's own domain, with
// text the tenant chose (a sign-in page, say).
func (s *server) ownHostTaken(p model.StatusPage) []apiv1.FieldError {
	if p.Host == "" || !s.ownHosts[status.HostName(p.Host)] {
		return nil
	}
	return []apiv1.FieldError{{Pointer: "#/host", Detail: "is this mcpmon's own host name (--api-hosts): a status page needs a host name of its own"}}
}
