package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/retry"
)

// Retry returns the retry called name, creating it with cfg on first use; later calls with the
// same name return the same retry — and so share its retry budget — and ignore cfg. The
// registry's event hub replaces cfg.Events. Past the cardinality guard, new names share the retry
// called catalog.OverflowName (created with the cfg of the call that first overflowed). An invalid cfg
// is an error on creation.
func (r *Registry) Retry(name string, cfg retry.Config) (*retry.Retry, error) {
	return familyOf[*retry.Retry](r, catalog.Retry).get(name, func(name string) (*retry.Retry, error) {
		cfg.Events = r.hub
		return retry.New(name, cfg)
	})
}

// Retries returns the registry's retries sorted by name. The slice must not be modified.
func (r *Registry) Retries() []Named[*retry.Retry] {
	return familyOf[*retry.Retry](r, catalog.Retry).all()
}
