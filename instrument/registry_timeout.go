package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/timeout"
)

// Timeout returns the timeout called name, creating it with cfg on first use; later calls with
// the same name return the same timeout and ignore cfg. Past the cardinality guard, new names
// share the timeout called catalog.OverflowName (created with the cfg of the call that first
// overflowed). An invalid cfg is an error on creation.
func (r *Registry) Timeout(name string, cfg timeout.Config) (*timeout.Timeout, error) {
	return familyOf[*timeout.Timeout](r, catalog.Timeout).get(name, func(name string) (*timeout.Timeout, error) {
		return timeout.New(name, cfg)
	})
}

// Timeouts returns the registry's timeouts sorted by name. The slice must not be modified.
func (r *Registry) Timeouts() []Named[*timeout.Timeout] {
	return familyOf[*timeout.Timeout](r, catalog.Timeout).all()
}
