package prober

import "github.com/mcpmon/mcpmon/pkg/msg"

// The failure classes a probe ends in are the results' contract, kept with
// it in pkg/msg (msg.Classes: each class, its status and its meaning); these
// are their names here, where probes decide them.
const (
	ClassOK                = msg.ClassOK
	ClassDegraded          = msg.ClassDegraded
	ClassRateLimited       = msg.ClassRateLimited
	ClassAuthRequired      = msg.ClassAuthRequired
	ClassAuthRejected      = msg.ClassAuthRejected
	ClassAuthMisconfigured = msg.ClassAuthMisconfigured
	ClassForbidden         = msg.ClassForbidden
	ClassNotFound          = msg.ClassNotFound
	ClassNotMCP            = msg.ClassNotMCP
	ClassProtocolError     = msg.ClassProtocolError
	ClassRPCError          = msg.ClassRPCError
	ClassVersionMismatch   = msg.ClassVersionMismatch
	ClassSessionBroken     = msg.ClassSessionBroken
	ClassSSEDeaf           = msg.ClassSSEDeaf
	ClassHTTP5xx           = msg.ClassHTTP5xx
	ClassTimeout           = msg.ClassTimeout
	ClassRefused           = msg.ClassRefused
	ClassDNS               = msg.ClassDNS
	ClassTLS               = msg.ClassTLS
	ClassNetwork           = msg.ClassNetwork
	ClassBlockedTarget     = msg.ClassBlockedTarget
	ClassSecretMissing     = msg.ClassSecretMissing
	ClassToolFailed        = msg.ClassToolFailed
	ClassAuthTokenFailed   = msg.ClassAuthTokenFailed
	ClassAuthServerChanged = msg.ClassAuthServerChanged
)

// ClassInfo is one outcome class (msg.ClassInfo).
type ClassInfo = msg.ClassInfo

// Classes lists every class with its status, in README order (msg.Classes).
func Classes() []ClassInfo { return msg.Classes() }

// StatusOf maps a class to the probe status; unknown classes are down.
func StatusOf(class string) msg.Status { return msg.StatusOf(class) }
