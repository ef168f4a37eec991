select c.customer_id, c.name, c.country, count(o.order_id) as orders, sum(o.amount) as total
from {{ ref('stg_customers') }} c
join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
group by c.customer_id, c.name, c.country
