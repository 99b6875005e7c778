# An example machine module (docs/module-contract.md): one server, standing in for your provider's
# instance resource. Replace `terraform_data.server` with it (for example an `aws_instance` whose
# `user_data` is `var.bootstrap_data`), and keep the inputs you use and the two Cluster API outputs.

# Set by the controller under Cluster API (docs/module-contract.md, "Inputs"); declare only what you use.
variable "machine_name" {
  type    = string
  default = ""
}

variable "bootstrap_data" {
  type      = string
  default   = ""
  sensitive = true
}

# Your own settings, from spec.variables.
variable "size" {
  type    = string
  default = "small"
}

resource "terraform_data" "server" {
  input = {
    name = var.machine_name
    size = var.size
    # Never the bootstrap data itself in state or outputs: a digest says which data the server boots from.
    bootstrap_data_sha256 = nonsensitive(sha256(var.bootstrap_data))
  }
}

# Cluster API's contract fields (docs/module-contract.md, "Outputs").
output "providerID" {
  value = "example://${terraform_data.server.id}"
}

output "addresses" {
  value = [{ type = "InternalIP", address = "10.0.0.10" }]
}
