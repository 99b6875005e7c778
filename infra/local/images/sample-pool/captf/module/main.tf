# The sample machine pool module of the local run (infra/local/images/README.md): offline, built-in
# resources only. It stands for a group of servers that scales to `replicas` (from the MachinePool, through
# the module input contract: docs/module-contract.md) and produces the Cluster API outputs `providerIDList`
# and `replicas` (src/runner/contract-outputs.ts). Scaling adds or removes servers; nothing is replaced.

variable "name" {
  type    = string
  default = ""
}

variable "cluster_name" {
  type    = string
  default = ""
}

variable "replicas" {
  type    = number
  default = 1
}

variable "bootstrap_data" {
  type      = string
  default   = ""
  sensitive = true
}

variable "kubernetes_version" {
  type    = string
  default = ""
}

locals {
  name = var.name != "" ? var.name : "${var.cluster_name}-pool"
}

resource "terraform_data" "server" {
  count = var.replicas
  input = {
    name                  = "${local.name}-${count.index}"
    kubernetes_version    = var.kubernetes_version
    bootstrap_data_sha256 = nonsensitive(sha256(var.bootstrap_data))
  }
}

output "providerIDList" {
  value = [for server in terraform_data.server : "captf-local://${local.name}/${server.id}"]
}

output "replicas" {
  value = length(terraform_data.server)
}

output "bootstrap_data_sha256" {
  value = nonsensitive(var.bootstrap_data != "" ? sha256(var.bootstrap_data) : "")
}
