/**
 * The command API's front door: an API Gateway HTTP API with one route per route of the API
 * (functions/command-api/routes.ts), each behind IAM authorization (SigV4, `execute-api:Invoke`);
 * stage throttling from the topology's `http` spec, JSON access logs, no CORS unless origins
 * are named. An HTTP API rather than a Lambda function URL: it throttles by rate and burst
 * (a function URL only by reserved concurrency) and logs each request; both pass the request
 * to the function in payload format 2.0. Requests larger than the command side's limit are
 * refused by the function itself (413): neither front door has a configurable body limit.
 */
import { RemovalPolicy, Stack, aws_apigatewayv2 as apigwv2, aws_iam as iam, aws_logs as logs } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { Route } from '../functions/command-api/routes.ts';
import type { HttpSpec } from '../functions/topology.ts';

/** Properties of {@link CommandApi}. */
export interface CommandApiProps {
  /** The function that serves every route. */
  readonly handler: IFunction;
  /** The API's routes. */
  readonly routes: readonly Route[];
  /** Stage throttling: steady rate and burst. */
  readonly throttle: HttpSpec;
  /**
   * Browser origins allowed to call the API (CORS); requests still need a SigV4 signature.
   * @default - none: CORS off
   */
  readonly corsOrigins?: readonly string[];
  /**
   * Retention of the access logs.
   * @default one month
   */
  readonly logRetention?: logs.RetentionDays;
}

/** Response headers a browser may read, when CORS is on. */
const EXPOSED_HEADERS = ['location', 'retry-after', 'preference-applied', 'idempotent-replayed'];

/** The HTTP API in front of the command API function. */
export class CommandApi extends Construct {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  /** The API's base URL (the `$default` stage is served at the root). */
  readonly url: string;

  constructor(scope: Construct, id: string, props: CommandApiProps) {
    super(scope, id);
    const origins = props.corsOrigins ?? [];
    this.api = new apigwv2.HttpApi(this, 'Api', {
      apiName: `${Stack.of(this).stackName}-command-api`,
      description: 'kafka-aggregates command API: send commands and read their outcomes (IAM authorization)',
      createDefaultStage: false,
      ...(origins.length === 0
        ? {}
        : {
            corsPreflight: {
              allowOrigins: [...origins],
              allowMethods: [...new Set(props.routes.map((r) => apigwv2.CorsHttpMethod[r.method]))],
              allowHeaders: ['authorization', 'content-type', 'prefer', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'],
              exposeHeaders: EXPOSED_HEADERS,
            },
          }),
    });
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new apigwv2.HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.throttle.rateLimit, burstLimit: props.throttle.burstLimit },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            route: '$context.routeKey',
            status: '$context.status',
            caller: '$context.identity.caller',
            ip: '$context.identity.sourceIp',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            error: '$context.error.message',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    const integration = new HttpLambdaIntegration('Function', props.handler);
    const authorizer = new HttpIamAuthorizer();
    for (const route of props.routes)
      this.api.addRoutes({ path: route.path, methods: [apigwv2.HttpMethod[route.method]], integration, authorizer });
    this.url = this.api.apiEndpoint;
  }

  /** Lets `grantee` call every route of the API. */
  grantInvoke(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:Invoke'],
      resourceArns: [this.api.arnForExecuteApi('*', '/*', this.stage.stageName)],
    });
  }
}
