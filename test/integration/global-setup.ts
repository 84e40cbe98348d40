/**
 * Integration tests run against the real local stack: start the Kafka broker and the
 * DynamoDB emulator unless they already answer (installing them on first use), create the
 * topology's topics and tables, and on teardown stop only what this run started. A stack
 * left running with `npm run stack:up` is reused and kept, so repeated runs start in seconds.
 */
import { provision } from '../../local/provision.ts';
import { startStack } from '../../local/stack/stack.ts';

const log = (line: string): void => console.log(`[local stack] ${line}`);

export default async function setup(): Promise<() => Promise<void>> {
  const since = Date.now();
  log('checking the Kafka broker and the DynamoDB emulator (starting them if needed; the first run downloads them)');
  const stack = await startStack({ log });
  try {
    const { createdTopics, createdTables } = await provision();
    log(
      `ready in ${((Date.now() - since) / 1000).toFixed(1)} s: Kafka ${stack.endpoints.kafka}, DynamoDB ${stack.endpoints.dynamodb}` +
        (stack.started.length > 0 ? ` (started ${stack.started.join(', ')}; stopped after the tests)` : ' (reused)') +
        `; created topics [${createdTopics.join(', ')}], tables [${createdTables.join(', ')}]`,
    );
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return async () => {
    if (stack.started.length === 0) return;
    log(`stopping ${stack.started.join(', ')}`);
    await stack.stop();
  };
}
