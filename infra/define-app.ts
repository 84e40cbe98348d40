/**
 * Builds the CDK app: the stack from context settings, with the AWS Solutions checks. Kept
 * apart from infra/app.ts so tests build exactly what `cdk synth` builds.
 */
import { App, type AppProps } from 'aws-cdk-lib';
import { applyLocalStackTarget } from './localstack.ts';
import { acknowledgeFindings, addNagChecks } from './nag.ts';
import { settingsFromContext } from './settings.ts';
import { KafkaAggregatesStack, type KafkaAggregatesStackProps } from './stack.ts';

/** Default stack name (context `stackName`). */
export const DEFAULT_STACK_NAME = 'KafkaAggregates';

/** The app and its one stack. */
export interface KafkaAggregatesApp {
  readonly app: App;
  readonly stack: KafkaAggregatesStack;
}

/**
 * Creates the app. `overrides` replace stack properties (tests use it for functions the
 * topology does not declare yet).
 */
export const defineApp = (
  props: AppProps = {},
  overrides: Partial<Omit<KafkaAggregatesStackProps, 'settings'>> = {},
): KafkaAggregatesApp => {
  const app = new App(props);
  const settings = settingsFromContext(app.node);
  const stackName = String(app.node.tryGetContext('stackName') ?? DEFAULT_STACK_NAME);
  // Environment-agnostic unless a VPC must be looked up, which needs an account and region.
  const env =
    settings.vpcId !== undefined ? { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION } : undefined;
  const stack = new KafkaAggregatesStack(app, stackName, {
    settings,
    description: 'kafka-aggregates: event-sourced aggregates on Lambda, MSK and DynamoDB',
    ...(env !== undefined ? { env } : {}),
    ...overrides,
  });
  if (settings.target === 'localstack') applyLocalStackTarget(stack);
  addNagChecks(app);
  acknowledgeFindings(stack);
  return { app, stack };
};
