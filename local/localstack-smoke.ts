/**
 * `npm run smoke:localstack`: the deployed stack on LocalStack, end to end, for a user who
 * has LocalStack with MSK (a paid feature; its image needs an auth token). Checks LocalStack's
 * health, deploys with cdklocal (`npm run deploy:localstack`, target=localstack), sends a
 * command through the deployed MSK trigger with `kafka-aggregates send --wait`, and reads the
 * aggregate back with `kafka-aggregates state`. Without LocalStack it stops at the health
 * check, says what to do, and deploys nothing.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../infra/bundling.ts';
import { KafkaAggregatesError } from '../functions/core/errors.ts';

const help = `Usage: npm run smoke:localstack -- [--endpoint URL] [--no-deploy] [--timeout ms]

  --endpoint URL   LocalStack's endpoint (default: AWS_ENDPOINT_URL, else http://localhost:4566)
  --no-deploy      use the stack an earlier run deployed (its outputs in .cache/localstack/outputs.json)
  --timeout ms     how long to wait for the command's result (default 120000)

Needs LocalStack running with MSK and Lambda (paid features; start it with LOCALSTACK_AUTH_TOKEN set).
Exit codes: 0 passed, 1 a step gave a wrong answer, 2 LocalStack missing or a step failed to run.`;

/** The services the stack and its deployment use on LocalStack (`kafka` is MSK). */
const REQUIRED_SERVICES = ['cloudformation', 'dynamodb', 'ec2', 'iam', 'kafka', 'lambda', 'logs', 's3', 'ssm', 'sts'] as const;
const OUTPUTS_FILE = join(PROJECT_ROOT, '.cache', 'localstack', 'outputs.json');
/** What a user needs to start, said in every failure before the deploy. */
const NEEDS = 'LocalStack with a LOCALSTACK_AUTH_TOKEN whose plan includes MSK and its Lambda triggers (paid features)';

/** The smoke test cannot go on; `exitCode` 2 when LocalStack or a tool is missing, 1 when a step answered wrongly. */
class SmokeError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'SmokeError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 2,
  ) {
    super(message);
  }
}

/** What LocalStack's health endpoint says. */
interface Health {
  readonly services?: Readonly<Record<string, string>>;
  readonly edition?: string;
  readonly version?: string;
}

const describeHealth = (health: Health): string =>
  `LocalStack${health.version === undefined ? '' : ` ${health.version}`} (${health.edition ?? 'edition unknown'})`;

/** Checks that LocalStack answers at `endpoint` and runs every service the stack needs. */
const checkHealth = async (endpoint: string): Promise<Health> => {
  const url = new URL('/_localstack/health', endpoint).href;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  } catch (error) {
    const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new SmokeError(
      `LocalStack is not answering at ${url} (${cause}). Start ${NEEDS} (e.g. \`localstack start\`), or point --endpoint or AWS_ENDPOINT_URL at it. Nothing was deployed.`,
    );
  }
  const body = await response.text();
  let health: Health;
  try {
    health = JSON.parse(body) as Health;
  } catch {
    health = {};
  }
  if (!response.ok || typeof health.services !== 'object') {
    throw new SmokeError(
      `${endpoint} answers, but not as LocalStack (HTTP ${response.status} from ${url}). Start ${NEEDS}, or point --endpoint at it. Nothing was deployed.`,
    );
  }
  const missing = REQUIRED_SERVICES.filter((name) => !['available', 'running'].includes(health.services?.[name] ?? ''));
  if (missing.length > 0) {
    const states = missing.map((name) => `${name === 'kafka' ? 'kafka (MSK)' : name}: ${health.services?.[name] ?? 'absent'}`).join(', ');
    throw new SmokeError(
      `${describeHealth(health)} at ${endpoint} lacks what the stack needs: ${states}. Start ${NEEDS}. Nothing was deployed.`,
    );
  }
  return health;
};

/** Runs a command with the terminal as its output; resolves with its exit code. */
const run = (command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: PROJECT_ROOT, env, stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 2));
  });

/** Runs the CLI and captures its standard output. */
const cli = (args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin', 'kafka-aggregates.js'), ...args], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 2, stdout }));
  });

/** The deployed stack's outputs the smoke test uses. */
interface StackOutputs {
  readonly BootstrapBrokers: string;
  readonly aggregatesTableName: string;
  readonly readModelsTableName: string;
}

const readOutputs = (): StackOutputs => {
  let all: Record<string, Partial<StackOutputs>>;
  try {
    all = JSON.parse(readFileSync(OUTPUTS_FILE, 'utf8')) as Record<string, Partial<StackOutputs>>;
  } catch (error) {
    throw new SmokeError(
      `cannot read the stack outputs ${OUTPUTS_FILE} (${error instanceof Error ? error.message : String(error)}): deploy first (run without --no-deploy)`,
    );
  }
  const [outputs] = Object.values(all);
  if (outputs?.BootstrapBrokers === undefined || outputs.aggregatesTableName === undefined || outputs.readModelsTableName === undefined) {
    throw new SmokeError(`${OUTPUTS_FILE} lacks BootstrapBrokers or the table names: deploy again`);
  }
  return outputs as StackOutputs;
};

const main = async (): Promise<number> => {
  const { values } = parseArgs({
    options: {
      endpoint: { type: 'string' },
      'no-deploy': { type: 'boolean' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(help);
    return 0;
  }
  const endpoint = values.endpoint ?? process.env.AWS_ENDPOINT_URL?.trim() ?? 'http://localhost:4566';
  const timeout = values.timeout ?? '120000';
  if (!/^\d+$/.test(timeout)) throw new SmokeError(`--timeout must be a whole number of milliseconds, got ${timeout}`);

  const health = await checkHealth(endpoint);
  console.log(`${describeHealth(health)} answers at ${endpoint} with ${REQUIRED_SERVICES.join(', ')}`);

  if (values['no-deploy'] !== true) {
    console.log('Deploying the stack with cdklocal (npm run deploy:localstack)...');
    const code = await run('npm', ['run', 'deploy:localstack']);
    if (code !== 0) throw new SmokeError(`npm run deploy:localstack failed (exit code ${code}); its output is above`);
  }
  const outputs = readOutputs();
  const env = {
    ...process.env,
    AWS_ENDPOINT_URL: endpoint,
    KAFKA_BROKERS: outputs.BootstrapBrokers,
    KAFKA_AUTH: 'none',
    AGGREGATES_TABLE: outputs.aggregatesTableName,
    READ_MODELS_TABLE: outputs.readModelsTableName,
  };
  const id = `smoke-${Date.now()}`;
  console.log(`Sending OpenAccount for account ${id} to ${outputs.BootstrapBrokers}; the deployed trigger runs the command handler...`);
  const sent = await cli(['send', 'account', id, 'OpenAccount', '{"owner":"smoke"}', '--wait', '--timeout', timeout], env);
  if (sent.code !== 0)
    throw new SmokeError(
      `send --wait did not get an accepted result (exit code ${sent.code}): ${sent.stdout.trim() || 'no result'}`,
      sent.code === 1 ? 1 : 2,
    );
  console.log(`Result: ${sent.stdout.trim()}`);
  const state = await cli(['state', 'account', id], env);
  const head = state.code === 0 ? (JSON.parse(state.stdout) as { version?: number; state?: { owner?: string } }) : undefined;
  if (head?.version !== 1 || head.state?.owner !== 'smoke')
    throw new SmokeError(`state did not read the account back at version 1 (exit code ${state.code}): ${state.stdout.trim()}`, 1);
  console.log(`State: ${state.stdout.trim()}`);
  console.log('LocalStack smoke test passed: deployed, the MSK trigger ran the command handler, and its head is in DynamoDB.');
  return 0;
};

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`smoke:localstack: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(error instanceof SmokeError ? error.exitCode : 2);
  },
);
