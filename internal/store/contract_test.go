package store_test

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

// The memory store keeps the contract of every store.
func TestContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}
