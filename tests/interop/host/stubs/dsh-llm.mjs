import { randomUUID } from 'node:crypto';

// A user message as the DeepSeek Harness runtime makes one: it needs an id, which the
// client uses to match the message to the turn that claims it.
export function createUserMessage({ content, source }) {
  return { id: randomUUID(), role: 'user', content, source };
}
