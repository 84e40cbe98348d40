/**
 * `npm run stack:up | stack:down | stack:reset`: start the local Kafka broker and DynamoDB
 * emulator (detached, they keep running), stop what was started, or clear their data.
 */
import { components, resetStack, startStack, stopStack } from './stack/stack.ts';

const usage = 'Usage: tsx local/stack-cli.ts up | down | reset';

const main = async (command: string): Promise<void> => {
  switch (command) {
    case 'up': {
      const { endpoints } = await startStack();
      console.log(`\nKAFKA_BROKERS=${endpoints.kafka}\nAWS_ENDPOINT_URL_DYNAMODB=${endpoints.dynamodb}`);
      console.log('Stop with `npm run stack:down`, clear data with `npm run stack:reset`.');
      return;
    }
    case 'down': {
      const stopped = await stopStack();
      console.log(stopped.length > 0 ? `Stopped: ${stopped.join(', ')}` : 'Nothing of ours was running.');
      return;
    }
    case 'reset': {
      const reset = await resetStack();
      const skipped = components.filter((c) => !reset.includes(c.name)).map((c) => c.name);
      console.log(`Cleared: ${reset.join(', ') || 'nothing'}` + (skipped.length > 0 ? ` (not running or not local: ${skipped.join(', ')})` : ''));
      return;
    }
    default:
      console.error(usage);
      process.exitCode = 2;
  }
};

main(process.argv[2] ?? '').then(
  // The servers are detached; nothing of this process needs to linger.
  () => process.exit(),
  (error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
    process.exit(1);
  },
);
