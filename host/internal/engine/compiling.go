package engine

import (
	"sync"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// compiling tracks the Wasm plugins New left compiling in the background
// (Options.CompileInBackground), so that one refused when its compile ends
// stops the run that is going on, before any case can record its error.
type compiling struct {
	mu      sync.Mutex
	plugins []deferredPlugin
	onFail  func(error) // the running run's stop, while one runs
}

type deferredPlugin struct {
	p *plugin.Deferred
	// refused names the plugin (config file:line, id) in its error.
	refused func(error) error
}

func (c *compiling) add(p *plugin.Deferred, refused func(error) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plugins = append(c.plugins, deferredPlugin{p: p, refused: refused})
}

// failed is each deferred plugin's onFail: the plugin calls it before any
// of its calls can see the error.
func (c *compiling) failed(err error) {
	c.mu.Lock()
	stop := c.onFail
	c.mu.Unlock()
	if stop != nil {
		stop(err)
	}
}

// watch calls stop with the cause when a plugin is refused after its
// compile; one refused already stops the run at once. It returns a
// function that stops watching.
func (c *compiling) watch(stop func(error)) (unwatch func()) {
	c.mu.Lock()
	c.onFail = stop
	plugins := c.plugins
	c.mu.Unlock()
	for _, d := range plugins {
		if err := d.p.Err(); err != nil {
			stop(d.refused(err))
			break
		}
	}
	return func() {
		c.mu.Lock()
		c.onFail = nil
		c.mu.Unlock()
	}
}
