import type { EventBus } from '../../src/bus/index.js';
import type { Envelope } from '../../src/events/index.js';

/** `bus` with its publish replaced by `publish` (which may call the bus's own); everything else goes to `bus`. */
export function withPublish(bus: EventBus, publish: (e: Envelope) => Promise<void>): EventBus {
  return {
    publish,
    subscribe: (p, cb, o) => bus.subscribe(p, cb, o),
    serve: (s, h, o) => bus.serve(s, h, o),
    request: (s, p, o) => bus.request(s, p, o),
    replay: (f) => bus.replay(f),
    close: () => bus.close(),
  };
}
