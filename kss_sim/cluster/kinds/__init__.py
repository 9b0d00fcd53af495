"""What kinds of object the cluster serves (the registry) and the form the store holds an object in."""
