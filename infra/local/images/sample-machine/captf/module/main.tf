# The sample machine module of the local run (infra/local/images/README.md): offline, built-in resources
# only. It stands for one server and produces the Cluster API outputs `providerID` and `addresses`
# (src/runner/contract-outputs.ts). It declares the module input contract (docs/module-contract.md): under
# Cluster API its server is named after the Machine and boots from the bootstrap data, of which the state
# keeps only a digest (output `bootstrap_data_sha256`). `size` updates in place; changing `generation` replaces the server (a
# destructive plan that waits for approval). `sleep_seconds` > 0 keeps the apply busy (and the state lock
# held) that long, for the deadline, drain and stale-lock runs of the end-to-end tests.

variable "name" {
  type    = string
  default = ""
}

# The module input contract (docs/module-contract.md): set by the controller, every one optional here.
variable "machine_name" {
  type    = string
  default = ""
}

variable "cluster_name" {
  type    = string
  default = ""
}

variable "bootstrap_data" {
  type      = string
  default   = ""
  sensitive = true
}

variable "bootstrap_format" {
  type    = string
  default = ""
}

variable "kubernetes_version" {
  type    = string
  default = ""
}

variable "control_plane" {
  type    = bool
  default = false
}

variable "failure_domain" {
  type    = string
  default = ""
}

variable "cluster_exports" {
  type    = map(string)
  default = {}
}

locals {
  # spec.variables.name wins; a machine cloned from a template carries none and is named after its Machine.
  name = var.name != "" ? var.name : var.machine_name
}

variable "size" {
  type    = string
  default = "small"
}

# The server's address is host 100 + index of its cluster's network (the cluster's `cidr` export; 10.20.0.0/16
# for a machine without a cluster); a machine with no index (one Cluster API clones from a template) gets
# host 1024 to 5119 derived from its name, so the machines of a MachineDeployment do not share an address
# (a network of /19 or wider).
variable "index" {
  type    = number
  default = 0
}

variable "generation" {
  type    = number
  default = 1
}

variable "sleep_seconds" {
  type    = number
  default = 0
}

resource "terraform_data" "server" {
  input            = { name = local.name, size = var.size }
  triggers_replace = [var.generation]
}

# What the server boots from: a new Kubernetes version or new bootstrap data replaces it, as a real
# machine module's user data would (Cluster API rolls out new Machines for both).
resource "terraform_data" "boot" {
  count = nonsensitive(var.bootstrap_data != "") ? 1 : 0
  input = {
    bootstrap_data_sha256 = nonsensitive(sha256(var.bootstrap_data))
    format                = var.bootstrap_format
    kubernetes_version    = var.kubernetes_version
    control_plane         = var.control_plane
    failure_domain        = var.failure_domain
    network_id            = lookup(var.cluster_exports, "network_id", "")
  }
}

# Created (and so run) only when sleep_seconds > 0. A later change of sleep_seconds updates it in place
# without sleeping again. The runner's image has no shell and no `sleep`: the image carries the local
# node's pause program as `sleep` beside the module (image.json), which given a number sleeps that long
# and exits 128+signal on SIGTERM or SIGINT. The runner copies the module, so `path.module` holds it.
resource "terraform_data" "busy" {
  count = var.sleep_seconds > 0 ? 1 : 0
  input = var.sleep_seconds
  provisioner "local-exec" {
    interpreter = ["${path.module}/sleep"]
    command     = tostring(var.sleep_seconds)
  }
}

output "providerID" {
  value = "captf-local://${local.name}/${terraform_data.server.id}"
}

output "bootstrap_data_sha256" {
  value = nonsensitive(var.bootstrap_data != "" ? sha256(var.bootstrap_data) : "")
}

output "addresses" {
  value = [{
    type    = "InternalIP"
    address = cidrhost(lookup(var.cluster_exports, "cidr", "10.20.0.0/16"), var.index > 0 ? 100 + var.index : 1024 + parseint(substr(sha256(local.name), 0, 3), 16))
  }]
}
