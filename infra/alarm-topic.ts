/**
 * The SNS topic every alarm of the stack notifies: the one given by ARN, or a new one (with
 * an e-mail subscription when an address is given), and its ARN as a stack output.
 */
import { CfnOutput, aws_sns as sns, aws_sns_subscriptions as subscriptions } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

/** The alarm topic of `scope`, from the monitoring's props. */
export const alarmTopic = (scope: Construct, props: { readonly alarmTopicArn?: string; readonly alarmEmail?: string }): sns.ITopic => {
  let topic: sns.ITopic;
  if (props.alarmTopicArn !== undefined) {
    topic = sns.Topic.fromTopicArn(scope, 'AlarmTopic', props.alarmTopicArn);
  } else {
    const created = new sns.Topic(scope, 'AlarmTopic', { displayName: 'kafka-aggregates alarms', enforceSSL: true });
    if (props.alarmEmail !== undefined) created.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    topic = created;
  }
  new CfnOutput(scope, 'AlarmTopicArn', {
    key: 'AlarmTopicArn',
    value: topic.topicArn,
    description: 'SNS topic every alarm of the stack notifies: subscribe to it',
  });
  return topic;
};
