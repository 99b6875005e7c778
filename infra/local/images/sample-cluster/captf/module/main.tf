# The sample cluster module of the local run (infra/local/images/README.md): offline, built-in resources
# only, so `init` downloads nothing. It stands for a network and a control-plane load balancer and
# produces the Cluster API output `controlPlaneEndpoint` (src/runner/contract-outputs.ts).
# `cidr` and `endpoint_port` update in place; changing `lb_generation` replaces the load balancer (a
# destructive plan that waits for approval).

variable "name" {
  type = string
}

variable "cidr" {
  type    = string
  default = "10.20.0.0/16"
}

variable "endpoint_port" {
  type    = number
  default = 6443
}

variable "lb_generation" {
  type    = number
  default = 1
}

resource "terraform_data" "network" {
  input = { name = var.name, cidr = var.cidr }
}

resource "terraform_data" "load_balancer" {
  input            = { host = cidrhost(var.cidr, 10), port = var.endpoint_port }
  triggers_replace = [var.lb_generation]
}

output "controlPlaneEndpoint" {
  value = terraform_data.load_balancer.output
}
