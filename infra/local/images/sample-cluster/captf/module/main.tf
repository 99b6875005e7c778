# The sample cluster module of the local run (infra/local/images/README.md): offline, built-in resources
# only, so `init` downloads nothing. It stands for a network and a control-plane load balancer and
# produces the Cluster API outputs `controlPlaneEndpoint` and `failureDomains`, and `exports` for its
# machines (src/runner/contract-outputs.ts).
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

# Cluster API contract: the cluster's failure domains (status.failureDomains).
output "failureDomains" {
  value = [
    { name = "zone-a", controlPlane = true },
    { name = "zone-b", controlPlane = true },
  ]
}

# Handed to the modules of the cluster's machines and pools as cluster_exports (docs/module-contract.md).
output "exports" {
  value = { network_id = terraform_data.network.id, cidr = var.cidr }
}
