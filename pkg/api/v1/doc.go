// Package apiv1 is the wire contract of mcpmon's REST API (/v1): the
// request and response bodies, the problem details of error answers, and
// the defaults and markers the contract names. It holds types and
// constants only, no behaviour and no I/O, so that a client
// (pkg/client, pkg/declarative, pkg/registry) reads the API's shapes
// without linking the server: pkg/api decodes requests into these types,
// maps them to and from the stored model, and encodes the answers.
// openapi.yaml describes the same shapes; pkg/api's tests check every
// exchange against it.
//
// The package is named apiv1, not v1, so that a call site says which
// contract it means (apiv1.EndpointView) without an import alias.
package apiv1
