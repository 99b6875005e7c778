# The sample machine module of the local run (infra/local/images/README.md): offline, built-in resources
# only. It stands for one server and produces the Cluster API outputs `providerID` and `addresses`
# (src/runner/contract-outputs.ts). `size` updates in place; changing `generation` replaces the server (a
# destructive plan that waits for approval). `sleep_seconds` > 0 keeps the apply busy (and the state lock
# held) that long, for the deadline, drain and stale-lock runs of the end-to-end tests.

variable "name" {
  type = string
}

variable "size" {
  type    = string
  default = "small"
}

variable "index" {
  type    = number
  default = 1
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
  input            = { name = var.name, size = var.size }
  triggers_replace = [var.generation]
}

# Created (and so run) only when sleep_seconds > 0; the local node runs containers on the host, which has
# a shell. A later change of sleep_seconds updates it in place without sleeping again.
resource "terraform_data" "busy" {
  count = var.sleep_seconds > 0 ? 1 : 0
  input = var.sleep_seconds
  provisioner "local-exec" {
    command = "sleep ${var.sleep_seconds}"
  }
}

output "providerID" {
  value = "captf-local://${var.name}/${terraform_data.server.id}"
}

output "addresses" {
  value = [{ type = "InternalIP", address = cidrhost("10.20.0.0/16", 100 + var.index) }]
}
