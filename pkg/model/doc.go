// Package model holds mcpmon's nouns and the rules that belong to them, with
// no I/O: a registered Endpoint and its Rules, ToolCheck and OAuthClient; an
// Incident, its Transitions and the alerter's per-endpoint Tracker; a
// Delivery record; a ChangeEvent and the one list of event kinds; a
// Maintenance window; and the uptime maths over verdict rollups.
//
// The store persists these types, the stages (prober, aggregator, alerter)
// decide over them and the API maps them to its own representation, so a
// concept has one definition whichever package uses it. The package imports
// only the leaf contracts pkg/msg and pkg/schedule. The table of which
// concept lives where is in docs/design/architecture.md.
package model
