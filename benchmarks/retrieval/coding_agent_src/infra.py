"""infra: Terraform/OpenTofu for the AWS organisation, EKS clusters and shared services."""

from __future__ import annotations

from .spec import Project

I = Project("infra", ("claude-code", "mateo", "codex"))  # noqa: E741
add = I.add

add(
    "infra-accounts",
    "fact",
    "2026-03-01 09:00",
    "AWS accounts and what runs where",
    "Four AWS accounts: kestrel-prod (482113907365), kestrel-staging (310958276441), "
    "kestrel-shared (774091358820: ECR, Route 53, CI) and kestrel-security (CloudTrail, "
    "GuardDuty).",
    """
    Login: AWS IAM Identity Center via Google Workspace, start URL https://kestrel.awsapps.com/start
    Profiles in ~/.aws/config: prod-readonly, prod-admin, staging-admin, shared-admin
    The management account is used only for billing and SCPs.
    """,
    tags="aws accounts",
    agent="mateo",
    weight=2.0,
)
add(
    "infra-regions",
    "fact",
    "2026-03-01 11:20",
    "Primary region is eu-west-1",
    "Everything runs in eu-west-1 (Ireland); us-east-1 is used only for CloudFront ACM "
    "certificates and billing alarms, and eu-central-1 only for backup copies.",
    """
    Provider alias aws.us_east_1 exists solely for aws_acm_certificate of CloudFront
    Data residency: customer data must stay in the EU (contractual)
    """,
    tags="aws regions",
    agent="mateo",
)
add(
    "infra-state-dynamodb",
    "decision",
    "2026-03-01 15:00",
    "Terraform state in S3 with DynamoDB locking",
    "Remote state for every stack lives in the kestrel-tfstate bucket (versioned, KMS) in the "
    "shared account with locks in the DynamoDB table tf-locks.",
    """
    backend "s3" {
      bucket         = "kestrel-tfstate"
      key            = "live/prod/eu-west-1/eks/terraform.tfstate"
      dynamodb_table = "tf-locks"
      encrypt        = true
    }
    Stale lock after a killed plan: terraform force-unlock <LOCK_ID> (ask in #infra first)
    """,
    tags="terraform state",
    agent="mateo",
)
add(
    "infra-eks-129",
    "fact",
    "2026-03-01 16:30",
    "Production EKS cluster runs Kubernetes 1.29",
    "The prod cluster eks-prod-euw1 and staging eks-stg-euw1 run EKS 1.29 with managed node "
    "groups on m6i instances.",
    """
    modules/eks: cluster_version = "1.29"
    Add-ons: vpc-cni v1.16, coredns v1.11.1, kube-proxy v1.29.0
    Standard support for 1.29 ends March 2026 + 14 months; plan upgrades quarterly.
    """,
    tags="eks kubernetes versions",
    agent="mateo",
)
add(
    "infra-cidrs",
    "fact",
    "2026-03-02 10:00",
    "VPC CIDR plan",
    "prod uses 10.20.0.0/16, staging 10.30.0.0/16, shared 10.40.0.0/16; the office/VPN range is "
    "10.8.0.0/16. New VPCs must not overlap any of these.",
    """
    Subnets: /20 private per AZ (a, b, c), /24 public per AZ, /24 intra for endpoints
    EKS pods use secondary CIDR 100.64.0.0/16 (custom networking) in prod
    Allocation sheet: docs/network/cidr-allocations.md
    """,
    tags="network vpc",
    agent="mateo",
)
add(
    "infra-tf17",
    "decision",
    "2026-03-02 14:00",
    "Pin Terraform to 1.7.x",
    "All stacks require Terraform ~> 1.7.0 (required_version) and CI/Atlantis run 1.7.5; "
    "provider versions are pinned in each stack's .terraform.lock.hcl.",
    """
    terraform { required_version = "~> 1.7.0" }
    tfenv install 1.7.5 ; atlantis image ghcr.io/runatlantis/atlantis:v0.27.2
    """,
    tags="terraform versions",
    agent="mateo",
)
add(
    "infra-tagging",
    "decision",
    "2026-03-03 09:30",
    "Every AWS resource carries cost-center, service and env tags",
    "Cost allocation depends on three tags set through provider default_tags; untagged resources "
    "fail the tflint check in CI.",
    """
    provider "aws" { default_tags { tags = { cost-center = var.cost_center,
                                            service = var.service, env = var.env } } }
    cost-center values: payments, data, platform, web
    Tag policy in the management account reports non-compliant resources weekly.
    """,
    tags="aws tagging cost",
    agent="mateo",
)
add(
    "infra-dns",
    "fact",
    "2026-03-03 13:10",
    "DNS zones and who manages them",
    "kestrel.dev is a public hosted zone in the shared account; internal.kestrel.dev is a private "
    "zone shared to prod and staging VPCs. external-dns creates app records from Ingress objects.",
    """
    external-dns: --txt-owner-id=eks-prod-euw1, --domain-filter=kestrel.dev
    Apex and MX records are Terraform-managed in live/shared/global/dns
    Delegations: staging.kestrel.dev -> staging account zone
    """,
    tags="dns route53",
    agent="mateo",
)
add(
    "infra-datadog",
    "decision",
    "2026-03-03 16:00",
    "Use Datadog for metrics and APM",
    "Cluster and application metrics, logs and APM go to Datadog via the datadog-agent DaemonSet; "
    "monitors are defined in Terraform (datadog provider).",
    """
    Helm: datadog/datadog 3.60, DD_SITE=datadoghq.eu
    Monitors: live/shared/global/monitoring/*.tf
    """,
    tags="observability monitoring",
    agent="mateo",
)
add(
    "infra-naming",
    "pattern",
    "2026-03-04 10:30",
    "Terraform layout and naming conventions",
    "Reusable modules live in modules/<name>; deployable stacks in "
    "live/<account>/<region>/<stack>; resource names are snake_case and describe the role, not "
    "the type.",
    """
    live/prod/eu-west-1/eks, live/prod/eu-west-1/rds-payments, live/shared/global/dns
    Good: aws_security_group.payments_db ; Bad: aws_security_group.sg1
    Every stack has versions.tf, backend.tf, variables.tf, outputs.tf, README.md
    """,
    tags="terraform conventions",
    agent="mateo",
)
add(
    "infra-rds-payments",
    "fact",
    "2026-03-04 14:20",
    "payments RDS instance settings",
    "payments-prod is a Multi-AZ db.r6g.xlarge with 500 GiB gp3, 14-day automated backups with "
    "PITR, deletion protection on, and Performance Insights kept 7 days.",
    """
    Stack: live/prod/eu-west-1/rds-payments (module rds-postgres)
    Security group payments_db allows 5432 only from the pgbouncer and migration pods' SG
    Maintenance window: sun:02:00-sun:03:00 UTC
    """,
    tags="rds postgres database",
    agent="mateo",
)
add(
    "infra-atlantis",
    "fact",
    "2026-03-05 09:40",
    "Terraform changes go through Atlantis on pull requests",
    "Atlantis comments a plan on every PR touching live/; apply requires an approval and a green "
    "plan, and runs from the PR with `atlantis apply -p <project>`. No applies from laptops.",
    """
    atlantis.yaml: one project per live/ stack, autoplan on *.tf and modules/** changes
    Commands: atlantis plan -p prod-eks ; atlantis apply -p prod-eks
    Locks: a PR holding a plan locks that project until merged or `atlantis unlock`
    """,
    tags="terraform atlantis ci",
    agent="mateo",
    weight=1.5,
)
add(
    "infra-ssm-secrets",
    "decision",
    "2026-03-05 11:00",
    "Inject app secrets from SSM Parameter Store",
    "Application secrets are SecureString parameters under /<env>/<service>/ and are rendered into "
    "Kubernetes Secrets by a CI step before helm upgrade.",
    """
    aws ssm put-parameter --name /prod/payments-api/STRIPE_API_KEY --type SecureString ...
    CI: scripts/render-secrets.sh prod payments-api | kubectl apply -f -
    """,
    tags="secrets kubernetes",
    agent="codex",
)
add(
    "infra-runbooks-ref",
    "reference",
    "2026-03-05 15:00",
    "Platform runbooks",
    "Platform team runbooks: cluster access, node problems, DNS, certificate renewal, and the AWS "
    "incident contacts.",
    """
    https://wiki.kestrel.dev/platform/runbooks
    https://wiki.kestrel.dev/platform/runbooks/eks-node-not-ready
    https://wiki.kestrel.dev/platform/runbooks/dns-resolution
    AWS Enterprise support case: https://support.console.aws.amazon.com/support/home
    """,
    tags="runbooks wiki",
    agent="mateo",
)
add(
    "infra-pref-plan-first",
    "preference",
    "2026-03-05 17:00",
    "Show the plan and ask before any apply",
    "Mateo's rule for agents: never run terraform/tofu apply, kubectl delete or helm uninstall "
    "yourself; paste the plan or diff and wait for an explicit go-ahead.",
    """
    Allowed without asking: plan, validate, fmt, kubectl get/describe/logs
    Needs explicit OK: apply, destroy, state mv/rm, kubectl delete/scale in prod
    """,
    tags="safety terraform agents",
    agent="mateo",
    weight=3.0,
)
add(
    "infra-ingress-nginx",
    "decision",
    "2026-03-06 10:00",
    "Expose services with ingress-nginx",
    "HTTP traffic enters the clusters through ingress-nginx behind one NLB per cluster; TLS "
    "certificates come from cert-manager with Let's Encrypt DNS-01.",
    """
    Helm: ingress-nginx 4.10, controller replicas 3, NLB via service annotations
    cert-manager ClusterIssuer letsencrypt-dns (Route 53 solver)
    """,
    tags="ingress networking kubernetes",
    agent="mateo",
)
add(
    "infra-cluster-autoscaler",
    "decision",
    "2026-03-07 10:00",
    "Scale EKS nodes with cluster-autoscaler",
    "Node groups scale with cluster-autoscaler 1.29 using the auto-discovery tags; min 3, max 30 "
    "nodes per group in prod.",
    """
    --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/eks-prod-euw1
    --balance-similar-node-groups --skip-nodes-with-system-pods=false
    """,
    tags="eks autoscaling kubernetes",
    agent="mateo",
)
add(
    "infra-argocd",
    "decision",
    "2026-03-08 09:00",
    "Deploy applications with Argo CD",
    "Applications are deployed by Argo CD from the kestrel/deploy repo (app-of-apps); staging "
    "auto-syncs, prod syncs manually after review.",
    """
    kestrel/deploy: apps/<env>/<service>.yaml -> Helm chart + values file in the service repo
    Argo CD UI: https://argocd.internal.kestrel.dev (SSO)
    argocd app sync payments-prod --prune
    """,
    tags="deploy argocd gitops",
    agent="mateo",
)
add(
    "infra-tailscale",
    "fact",
    "2026-03-09 11:00",
    "Engineers reach private services over Tailscale",
    "A Tailscale subnet router in the shared VPC advertises the prod, staging and shared CIDRs; "
    "ACLs in tailscale/acl.hujson restrict prod to the platform and payments groups.",
    """
    tailscale up --accept-routes
    Subnet router: EC2 t4g.small ts-router-euw1 (ASG of 1, auth key from Secrets Manager)
    Access to the payments DB goes through a bastion pod, never directly.
    """,
    tags="network vpn access",
    agent="mateo",
)
add(
    "infra-gha-runners-ec2",
    "decision",
    "2026-03-10 14:00",
    "Self-hosted GitHub Actions runners on EC2",
    "CI jobs that need AWS network access run on self-hosted runners in an EC2 autoscaling group "
    "in the shared account (label self-hosted-linux).",
    """
    ASG gh-runners (c6i.2xlarge, min 2 max 10), registered with a PAT-based token script
    Ephemeral: no. Workspaces cleaned by a post-job hook.
    """,
    tags="ci github-actions runners",
    agent="codex",
)
add(
    "infra-breakglass",
    "procedure",
    "2026-03-12 10:00",
    "Break-glass access to production",
    "Use the BreakGlassAdmin role only during a declared incident: two people, announce in "
    "#incident, and every session is reviewed afterwards from CloudTrail.",
    """
    1. Declare or join the incident channel; get a second person on the call
    2. aws sso login --profile prod-breakglass   (permission set BreakGlassAdmin, 1 h)
    3. Do the minimum; paste commands into the incident channel as you go
    4. Afterwards: file OPS ticket with CloudTrail event ids for review
    """,
    tags="access security incident",
    agent="mateo",
    weight=2.0,
)
add(
    "infra-backup-policy",
    "decision",
    "2026-04-07 10:00",
    "AWS Backup plan for stateful resources",
    "Anything tagged backup=daily is backed up by the AWS Backup plan kestrel-daily: retained 35 "
    "days and copied to eu-central-1.",
    """
    OPS-61. live/prod/eu-west-1/backup (aws_backup_plan, aws_backup_selection by tag)
    Covers RDS snapshots on top of PITR, EBS volumes, EFS
    Restore test every quarter (last: see the DR drill record).
    """,
    tags="backup dr",
    agent="mateo",
)
add(
    "infra-rds-password",
    "procedure",
    "2026-04-09 14:00",
    "Rotate the RDS master password",
    "RDS master credentials are managed by RDS in Secrets Manager (manage_master_user_password); "
    "rotate by triggering rotation, then restart the pods that read the secret.",
    """
    aws secretsmanager rotate-secret --secret-id 'rds!db-3f6a...'  # payments-prod secret
    Apps use their own roles (payments_app), not the master user - only the migration job and
    break-glass use master.
    After rotation: kubectl -n payments rollout restart deploy/pgbouncer
    """,
    tags="rds secrets rotation",
    agent="mateo",
)
add(
    "infra-graviton",
    "decision",
    "2026-04-14 10:00",
    "Run cluster workloads on Graviton (arm64)",
    "New node capacity is Graviton (m7g/c7g), about 20% cheaper for the same throughput; every "
    "image must be built multi-arch.",
    """
    OPS-88
    docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/kestrel/<svc>:<tag> --push .
    Node selector not needed once all images are multi-arch; amd64 pool kept for stragglers.
    """,
    tags="arm64 graviton cost",
    agent="mateo",
)
add(
    "infra-lesson-arm-image",
    "lesson",
    "2026-04-20 12:30",
    "exec format error after scheduling onto Graviton nodes",
    "The notifications service crashed on the new arm64 nodes because its image was built for "
    "amd64 only. CI now fails when a pushed manifest list lacks linux/arm64.",
    """
    OPS-91
    Pod log: exec /usr/local/bin/notifications: exec format error
    Check: docker buildx imagetools inspect ghcr.io/kestrel/notifications:v2.3.1
    """,
    tags="arm64 graviton docker",
    agent="codex",
)
add(
    "infra-lesson-rds-replace",
    "lesson",
    "2026-04-23 11:00",
    "Renaming an RDS identifier forces replacement",
    "A PR renamed the payments RDS identifier for consistency and the Atlantis plan showed the "
    "database would be destroyed and recreated. Caught in review; stateful resources now have "
    "prevent_destroy.",
    """
    OPS-77
    Plan: -/+ resource "aws_db_instance" "payments" {
            ~ identifier = "payments-prod" -> "rds-payments-prod" # forces replacement
    All stateful resources: lifecycle { prevent_destroy = true } and deletion_protection = true
    Renames are done with `moved {}` blocks for addresses, never by changing identifiers.
    """,
    tags="terraform rds near-miss",
    agent="mateo",
    weight=2.5,
)
add(
    "infra-lesson-ndots",
    "lesson",
    "2026-04-30 10:00",
    "ndots:5 made external DNS lookups slow",
    "Every lookup of api.stripe.com from a pod first tried four cluster search domains, adding ~40 "
    "ms at p99 to outbound PSP calls. payments-api now sets ndots to 2.",
    """
    OPS-95
    spec.dnsConfig: { options: [ { name: ndots, value: "2" } ] }
    Alternative: use FQDNs with a trailing dot (api.stripe.com.)
    Also enabled NodeLocal DNSCache in both clusters.
    """,
    tags="dns kubernetes performance",
    agent="claude-code",
)
add(
    "infra-lesson-nat-cost",
    "lesson",
    "2026-05-06 15:00",
    "NAT gateway data processing was 31% of the April bill",
    "Image pulls from ECR and S3 traffic from the pipeline went through the NAT gateways. Gateway "
    "and interface VPC endpoints cut the NAT line by 80%.",
    """
    OPS-102
    Added: S3 gateway endpoint, interface endpoints ecr.api, ecr.dkr, sts, logs
    Cost Explorer filter: usage type EU-NatGateway-Bytes
    """,
    tags="cost network nat",
    agent="mateo",
)
add(
    "infra-eks-130",
    "fact",
    "2026-05-13 22:00",
    "Production EKS upgraded to Kubernetes 1.30",
    "eks-prod-euw1 and eks-stg-euw1 now run EKS 1.30; add-ons were bumped to the 1.30-compatible "
    "versions and node groups rolled.",
    """
    OPS-110
    cluster_version = "1.30"; vpc-cni v1.18.1, coredns v1.11.1-eksbuild.9, kube-proxy v1.30.0
    No deprecated APIs found by kubent before the upgrade.
    """,
    tags="eks kubernetes versions",
    agent="mateo",
    supersedes="infra-eks-129",
)
add(
    "infra-eks-upgrade",
    "procedure",
    "2026-05-14 10:00",
    "Upgrade an EKS cluster by one minor version",
    "Check deprecated APIs, upgrade staging first, bump the control plane, then add-ons, then "
    "nodes; one minor version at a time, never skip.",
    """
    1. kubent --target-version 1.31   (kube-no-trouble) - fix every finding
    2. staging: cluster_version in live/staging/eu-west-1/eks, atlantis apply, soak 1 week
    3. prod control plane (~10 min, API stays up)
    4. add-ons: vpc-cni, coredns, kube-proxy, ebs-csi to the versions in the AWS matrix
    5. nodes: bump the AMI alias in the Karpenter EC2NodeClass; drift replaces nodes
    """,
    tags="eks kubernetes upgrade",
    agent="claude-code",
    updated="2026-09-09 12:00",
)
add(
    "infra-eks-upgrade-ref",
    "reference",
    "2026-05-14 10:30",
    "EKS upgrade references",
    "AWS docs for cluster upgrades and the add-on version matrix, plus kube-no-trouble for "
    "deprecated API detection.",
    """
    https://docs.aws.amazon.com/eks/latest/userguide/update-cluster.html
    https://docs.aws.amazon.com/eks/latest/userguide/managing-add-ons.html
    https://github.com/doitintl/kube-no-trouble
    """,
    tags="eks docs upgrade",
    agent="mateo",
    weight=0.5,
)
add(
    "infra-karpenter",
    "decision",
    "2026-05-21 10:00",
    "Replace cluster-autoscaler with Karpenter",
    "Karpenter 1.0 provisions nodes directly from pending pods, picks Graviton spot or on-demand "
    "capacity per NodePool and consolidates under-used nodes.",
    """
    OPS-115
    NodePools: default (on-demand, m7g/c7g), batch (spot allowed, taint workload=batch)
    EC2NodeClass amiSelectorTerms alias: al2023@latest pinned per cluster
    Managed node group kept only for karpenter itself and CoreDNS (2 x m7g.large)
    """,
    tags="eks autoscaling karpenter",
    agent="mateo",
    supersedes="infra-cluster-autoscaler",
)
add(
    "infra-karpenter-ref",
    "reference",
    "2026-05-21 10:30",
    "Karpenter docs: NodePools and disruption",
    "Karpenter reference pages for NodePool configuration, disruption budgets and consolidation.",
    """
    https://karpenter.sh/docs/concepts/nodepools/
    https://karpenter.sh/docs/concepts/disruption/
    """,
    tags="karpenter docs",
    agent="mateo",
    weight=0.5,
)
add(
    "infra-lesson-karpenter-pdb",
    "lesson",
    "2026-06-03 09:00",
    "Karpenter consolidation evicted every payments-api pod at once",
    "payments-api had no PodDisruptionBudget, so consolidation drained the two nodes holding all "
    "its replicas together and the API was down for 70 seconds.",
    """
    OPS-131
    Every Deployment with replicas > 1 now needs a PDB (kyverno policy require-pdb)
    payments-api: minAvailable: 50%
    Migration jobs carry annotation karpenter.sh/do-not-disrupt: "true"
    NodePool disruption budget: nodes: "10%"
    """,
    tags="karpenter kubernetes incident",
    agent="mateo",
    weight=2.0,
)
add(
    "infra-external-secrets",
    "decision",
    "2026-06-08 10:00",
    "Sync Kubernetes secrets from Secrets Manager with External Secrets",
    "External Secrets Operator reads AWS Secrets Manager through IRSA and keeps Kubernetes "
    "Secrets in sync; the CI render step and SSM parameters for apps were retired.",
    """
    OPS-135
    ExternalSecret payments-api: refreshInterval 1h, dataFrom extract key payments/prod/app
    ClusterSecretStore aws-secrets-manager (role external-secrets-euw1)
    Rotations show up in pods after a restart (reloader annotation on deployments).
    """,
    tags="secrets kubernetes",
    agent="claude-code",
    supersedes="infra-ssm-secrets",
)
add(
    "infra-arc",
    "decision",
    "2026-06-12 14:00",
    "Run GitHub Actions runners on EKS with ARC",
    "Self-hosted runners moved from the EC2 autoscaling group to actions-runner-controller scale "
    "sets in the shared cluster: ephemeral pods, GitHub App auth, scale to zero.",
    """
    OPS-138
    helm install arc-runners ... gha-runner-scale-set, runnerScaleSetName: kestrel-linux
    runs-on: kestrel-linux   (was: self-hosted-linux)
    Docker builds use dind sidecar; cache via the S3 buildx backend.
    """,
    tags="ci github-actions runners",
    agent="codex",
    supersedes="infra-gha-runners-ec2",
)
add(
    "infra-alb-controller",
    "decision",
    "2026-06-26 10:00",
    "Replace ingress-nginx with the AWS Load Balancer Controller",
    "Ingresses are now served by ALBs managed by aws-load-balancer-controller with ACM "
    "certificates and IngressGroups, so ingress-nginx and cert-manager for public hosts are gone.",
    """
    OPS-144
    annotations: alb.ingress.kubernetes.io/group.name: public, target-type: ip
    Certificates: ACM wildcard *.kestrel.dev, discovered by host
    WAF: aws_wafv2_web_acl attached via alb.ingress.kubernetes.io/wafv2-acl-arn
    """,
    tags="ingress networking alb",
    agent="mateo",
    supersedes="infra-ingress-nginx",
)
add(
    "infra-opentofu",
    "decision",
    "2026-07-01 10:00",
    "Switch from Terraform to OpenTofu 1.10",
    "All stacks now run on OpenTofu 1.10 (tofu CLI) in CI and Atlantis; state files were "
    "compatible and no resources changed. Terraform 1.7 is no longer installed.",
    """
    OPS-150
    required_version = "~> 1.10" ; Atlantis: --default-tf-distribution=opentofu
    Locally: mise use opentofu@1.10 ; commands are tofu init/plan (never terraform)
    Provider registry: registry.opentofu.org mirrors the hashicorp providers we use
    """,
    tags="terraform opentofu versions",
    agent="mateo",
    supersedes="infra-tf17",
)
add(
    "infra-lesson-oidc",
    "lesson",
    "2026-07-16 16:00",
    "GitHub OIDC trust policy allowed any kestrel repository",
    "The deploy role trusted token.actions.githubusercontent.com:sub = repo:kestrel/*, so any repo "
    "in the org could assume it. Trust is now pinned to repo and branch.",
    """
    OPS-160 (found in the security review)
    Condition StringEquals sub = "repo:kestrel/infra:ref:refs/heads/main"
    Audit query: IAM Access Analyzer finding type ExternalAccess on role gh-deploy-*
    """,
    tags="security iam github-actions",
    agent="mateo",
    weight=2.0,
)
add(
    "infra-grafana",
    "decision",
    "2026-07-29 10:00",
    "Move observability from Datadog to Grafana Cloud",
    "Metrics (Prometheus remote write), logs (Loki) and traces (Tempo) go to Grafana Cloud via "
    "Grafana Alloy; Datadog contract ends 2026-08-31.",
    """
    OPS-166
    Alloy DaemonSet (grafana/k8s-monitoring 1.4), stack kestrel.grafana.net
    Alerts as code: live/shared/global/grafana (grafana provider), routed to PagerDuty
    Estimated saving: 46% of the observability bill.
    """,
    tags="observability monitoring grafana",
    agent="mateo",
    supersedes="infra-datadog",
)
add(
    "infra-state-lockfile",
    "decision",
    "2026-08-05 10:00",
    "Use S3 native state locking instead of DynamoDB",
    "OpenTofu 1.10 supports lock files in S3 (use_lockfile = true), so the tf-locks DynamoDB table "
    "is no longer used and will be deleted.",
    """
    OPS-171
    backend "s3" { bucket = "kestrel-tfstate", key = "...", use_lockfile = true, encrypt = true }
    Migration: added use_lockfile alongside dynamodb_table for two weeks, then removed the table.
    Stale lock: delete the .tflock object only after checking no plan is running.
    """,
    tags="terraform state opentofu",
    agent="mateo",
    supersedes="infra-state-dynamodb",
)
add(
    "infra-new-account",
    "procedure",
    "2026-08-12 10:00",
    "Create a new AWS account with Account Factory for Terraform",
    "New accounts are requested by PR to kestrel/aft-account-requests; AFT creates the account, "
    "applies the baseline customisations and adds it to Identity Center.",
    """
    1. Add terraform/<name>.tf with module "aft_account_request" (email aws+<name>@kestrel.dev)
    2. Pick an OU: Workloads/Prod or Workloads/NonProd; set cost-center tag
    3. Merge -> the aft-account-request pipeline runs (~25 min)
    4. Allocate a CIDR in docs/network/cidr-allocations.md before creating a VPC
    """,
    tags="aws accounts aft",
    agent="claude-code",
)
add(
    "infra-lesson-cert-expiry",
    "lesson",
    "2026-08-22 09:00",
    "Expired internal CA certificate broke service-to-service mTLS",
    "The intermediate CA used for payments-admin mTLS expired after one year; the BFF could not "
    "reach payments-admin for 50 minutes. CA certs are now issued by ACM Private CA with alerts.",
    """
    OPS-175
    Error in BFF logs: x509: certificate has expired or is not yet valid
    Alert: cert expiry < 30 days (blackbox exporter probe_ssl_earliest_cert_expiry)
    """,
    tags="tls certificates incident",
    agent="mateo",
    weight=2.0,
)
add(
    "infra-eks-131",
    "fact",
    "2026-09-09 22:00",
    "Production EKS upgraded to Kubernetes 1.31",
    "Both clusters run EKS 1.31 after the September upgrade; nodes are AL2023 only since AL2 AMIs "
    "are not published for 1.31+ on our instance types.",
    """
    OPS-182
    cluster_version = "1.31"; vpc-cni v1.19.0, coredns v1.11.3, kube-proxy v1.31.0
    EC2NodeClass alias al2023@v20260905
    """,
    tags="eks kubernetes versions",
    agent="mateo",
    supersedes="infra-eks-130",
)
add(
    "infra-dr-drill",
    "context",
    "2026-09-18 15:00",
    "Disaster recovery drill, September 2026",
    "Restored payments-prod from the eu-central-1 backup copy into a scratch account in 47 minutes "
    "(RTO target 2 h); PITR restore in-region took 23 minutes.",
    """
    OPS-185
    Gaps: the restore runbook referenced the old ingress-nginx setup; DNS TTLs of 3600 s too long
    Actions: lower api.kestrel.dev TTL to 60 s, update runbook (done)
    """,
    tags="dr backup drill",
    agent="mateo",
)
add(
    "infra-kyverno",
    "pattern",
    "2026-06-20 10:00",
    "Cluster policies are enforced with Kyverno",
    "Kyverno ClusterPolicies reject workloads without resource requests, without a PDB when "
    "replicas > 1, or with images outside ghcr.io/kestrel and the ECR mirror.",
    """
    OPS-140. policies/: require-requests.yaml, require-pdb.yaml, restrict-registries.yaml
    Mode Enforce in prod, Audit in staging for a week before enforcing a new policy
    Exceptions via PolicyException objects reviewed by platform.
    """,
    tags="kubernetes policy security",
    agent="mateo",
)
add(
    "infra-pref-for-each",
    "preference",
    "2026-07-14 09:30",
    "Use for_each with keys, not count, for lists of resources",
    "Mateo wants repeated Terraform resources keyed by a stable name with for_each; count indexes "
    "shift when an item is removed and cause surprise replacements.",
    """
    Good: for_each = toset(var.buckets)  -> aws_s3_bucket.this["exports"]
    Bad:  count = length(var.buckets)     -> aws_s3_bucket.this[2]
    count is fine only for on/off toggles (count = var.enabled ? 1 : 0).
    """,
    tags="terraform style",
    agent="mateo",
    weight=1.5,
)

RECORDS = I.records
