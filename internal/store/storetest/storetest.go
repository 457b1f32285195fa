// Package storetest is the contract every store.Store keeps: the same
// tests, run by the package of each implementation (store's memory store,
// internal/store/sqlite, internal/store/postgres) against its own store.
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
//	}
package storetest

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// Opener opens a new, empty store for one test; the test's cleanup closes
// it.
type Opener func(t *testing.T) store.Store

// Run runs every contract test as a subtest of t, each against a store
// open opens.
func Run(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, Opener)
	}{
		{"Requests", testRequests},
		{"Frames", testFrames},
		{"FrameOrder", testFrameOrder},
		{"FrameEndOnly", testFrameEndOnly},
		{"EndExecutingFrame", testEndExecutingFrame},
		{"IdemRecords", testIdemRecords},
		{"IdemClaims", testIdemClaims},
		{"IdemSettle", testIdemSettle},
		{"IdemSettleClaim", testIdemSettleClaim},
		{"RequestInterruptedIsFinal", testRequestInterruptedIsFinal},
		{"RequestEndedHandoffIsFinal", testRequestEndedHandoffIsFinal},
		{"AuditLog", testAuditLog},
		{"DeadLetters", testDeadLetters},
		{"TakeDeadLetter", testTakeDeadLetter},
		{"Closed", testClosed},
		{"RequestAuditIndex", testRequestAuditIndex},
		{"AuditMatch", testAuditMatch},
		{"RequestTree", testRequestTree},
		{"RequestsByIDPrefix", testRequestsByIDPrefix},
		{"LedgerNeverOverspends", testLedgerNeverOverspends},
		{"RefusalsInARow", testRefusalsInARow},
		{"ApprovalsCompareVersions", testApprovalsCompareVersions},
		{"EntityVersions", testEntityVersions},
		{"ClaimEntities", testClaimEntities},
		{"StaleReadAcrossRuntimes", testStaleReadAcrossRuntimes},
		{"StoppedRequestIsFinal", testStoppedRequestIsFinal},
		{"Pins", testPins},
		{"TasksStayFinal", testTasksStayFinal},
		{"Sessions", testSessions},
		{"ResponseOwners", testResponseOwners},
		{"HandedTasks", testHandedTasks},
		{"HandedTaskClaim", testHandedTaskClaim},
		{"HandedTaskCalls", testHandedTaskCalls},
		{"IdempotencyRepeat", testIdempotencyRepeat},
		{"IdempotencyConcurrentOnce", testIdempotencyConcurrentOnce},
		{"IdempotencyRelease", testIdempotencyRelease},
		{"IdempotencyExpiry", testIdempotencyExpiry},
		{"IdempotencySweepMeetsClaim", testIdempotencySweepMeetsClaim},
		{"IdempotencyWaitEndsWithContext", testIdempotencyWaitEndsWithContext},
		{"IdempotencyOtherOwner", testIdempotencyOtherOwner},
		{"IdempotencyLease", testIdempotencyLease},
		{"IdempotencyOwnLostClaim", testIdempotencyOwnLostClaim},
		{"IdempotencyArgsReused", testIdempotencyArgsReused},
		{"IdempotencyRecover", testIdempotencyRecover},
		{"IdempotencyWithRuntime", testIdempotencyWithRuntime},
		{"IdempotencyClaimWritesCheckpoint", testIdempotencyClaimWritesCheckpoint},
		{"QueuedWritesTakeEffectInOrder", testQueuedWritesTakeEffectInOrder},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, open) })
	}
}
