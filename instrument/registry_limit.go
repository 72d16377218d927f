package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/limit"
	"github.com/stormwatch-go/stormwatch/instrument/throttle"
)

// Limiter returns the adaptive concurrency limiter called name, creating it with cfg on first
// use; later calls with the same name return the same limiter and ignore cfg. The registry's
// event hub replaces cfg.Events. Past the cardinality guard, new names share the limiter called
// catalog.OverflowName. An invalid cfg is an error on creation.
func (r *Registry) Limiter(name string, cfg limit.Config) (*limit.Limiter, error) {
	return familyOf[*limit.Limiter](r, catalog.Limiter).get(name, func(name string) (*limit.Limiter, error) {
		cfg.Events = r.hub
		return limit.New(name, cfg)
	})
}

// Limiters returns the registry's limiters sorted by name. The slice must not be modified.
func (r *Registry) Limiters() []Named[*limit.Limiter] {
	return familyOf[*limit.Limiter](r, catalog.Limiter).all()
}

// Throttle returns the client-side throttle called name, creating it with cfg on first use (same
// rules as [Registry.Limiter]).
func (r *Registry) Throttle(name string, cfg throttle.Config) (*throttle.Throttle, error) {
	return familyOf[*throttle.Throttle](r, catalog.Throttle).get(name, func(name string) (*throttle.Throttle, error) {
		cfg.Events = r.hub
		return throttle.New(name, cfg)
	})
}

// Throttles returns the registry's throttles sorted by name. The slice must not be modified.
func (r *Registry) Throttles() []Named[*throttle.Throttle] {
	return familyOf[*throttle.Throttle](r, catalog.Throttle).all()
}
