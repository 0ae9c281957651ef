export type { Envelope, EventBus, SubscribeOptions } from './types.js';
