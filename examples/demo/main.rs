//! Placeholder binary until the demo lands.
fn main() {
    println!("leasehold examples: see README.md");
}
